// Module rules of the Bustle client runtime module.
//
// The portable Bustle C++ SDK (bustle::client + bustle::proto, FlatBuffers
// headers, flatc output) is compiled inside this module, from the copy that
// clients/unreal/sync_sdk.py puts in Source/ThirdParty/BustleSDK. Each SDK
// source is compiled through one wrapper in Private/Sdk/ so that it sits
// between THIRD_PARTY_INCLUDES_START/END. No Asio and no prebuilt binaries:
// the socket is the engine's (FSocket on a worker thread).

using System.IO;
using UnrealBuildTool;

public class BustleClient : ModuleRules
{
	public BustleClient(ReadOnlyTargetRules Target) : base(Target)
	{
		PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs;
		// The engine's own include order (Unreal5_3 in 5.3, Unreal5_4 in 5.4,
		// Unreal5_5 in 5.5; 5.5 marks Unreal5_3 obsolete, unsupported from 5.6);
		// the sources include what they use.
		IncludeOrderVersion = EngineIncludeOrderVersion.Latest;
		// The SDK uses C++20 (defaulted comparisons, std::span).
		CppStandard = CppStandardVersion.Cpp20;
		// The SDK never throws; FlatBuffers is used without exceptions.
		bEnableExceptions = false;
		// SDK sources keep file-local functions in anonymous namespaces; unity
		// batching would put several of them into one translation unit.
		bUseUnity = false;

		string SdkRoot = Path.GetFullPath(Path.Combine(ModuleDirectory, "..", "ThirdParty", "BustleSDK"));
		if (!File.Exists(Path.Combine(SdkRoot, "SDK_VERSION")))
		{
			throw new BuildException(
				"BustleClient: the Bustle SDK copy is missing at " + SdkRoot +
				". Run clients/unreal/sync_sdk.py in the Bustle repository, then copy the plugin again.");
		}

		// Public: only engine modules; no SDK type appears in a public header.
		PublicDependencyModuleNames.AddRange(new string[]
		{
			"Core",
			"CoreUObject",
			"Engine",
			// UBustleSettings (a public header) derives from UDeveloperSettings.
			"DeveloperSettings",
		});
		PrivateDependencyModuleNames.AddRange(new string[]
		{
			// FSocket, ISocketSubsystem (the worker thread's connection).
			"Sockets",
		});

		// SDK include paths are private: Public/ never includes SDK headers.
		PrivateIncludePaths.AddRange(new string[]
		{
			Path.Combine(SdkRoot, "include"),
			Path.Combine(SdkRoot, "generated"),
			Path.Combine(SdkRoot, "flatbuffers", "include"),
			// For the wrappers: "src/frame_reader.cpp", "proto/src/framing.cpp".
			SdkRoot,
		});
	}
}
