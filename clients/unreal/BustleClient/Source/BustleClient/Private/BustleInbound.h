// What the socket worker hands to the game thread: one decoded server frame
// or a connection event. Plain data (SDK types and FString), no UObject.
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"
#include "Containers/UnrealString.h"
#include "HAL/PlatformTime.h"

struct FBustleInboundEvent
{
	enum class EKind : uint8
	{
		Connecting,    // a new connection is being opened (made by the game thread, not the worker)
		Welcome,       // handshake done: Welcome is set
		Delta,         // Delta is set; ReceiveUs is when its bytes were read
		Reply,         // a CommandResult (Subscribe, UpdateInterest, LeaseReport with an id)
		ServerError,   // the server sent Error (Message) and closes
		Disconnected,  // the connection ended (Message says why); the worker has stopped
	};

	EKind Kind = EKind::Disconnected;
	int64 ReceiveUs = 0;  // FPlatformTime::Seconds() in microseconds, the game thread's clock too
	bustle::client::WelcomeInfo Welcome;
	bustle::client::Delta Delta;
	bustle::client::CommandReply Reply;
	FString Message;
};

namespace BustleTime
{
	// The one monotonic clock of the plugin (worker receive times and render times).
	inline int64 NowUs()
	{
		return static_cast<int64>(FPlatformTime::Seconds() * 1e6);
	}
}
