#include "BustleLogSink.h"

#include "BustleLog.h"
#include "BustleUnrealTypes.h"

namespace
{
	ELogVerbosity::Type ToVerbosity(bustle::client::LogLevel Level)
	{
		switch (Level)
		{
		case bustle::client::LogLevel::Trace: return ELogVerbosity::VeryVerbose;
		case bustle::client::LogLevel::Debug: return ELogVerbosity::Verbose;
		case bustle::client::LogLevel::Info: return ELogVerbosity::Log;
		case bustle::client::LogLevel::Warning: return ELogVerbosity::Warning;
		case bustle::client::LogLevel::Error: return ELogVerbosity::Error;
		}
		return ELogVerbosity::Log;
	}
}

bool FBustleLogSink::enabled(bustle::client::LogLevel Level) const
{
#if NO_LOGGING
	// Test and Shipping builds (by default): LogBustle is then an empty
	// FNoLoggingCategory with no IsSuppressed, and UE_LOG reports only Fatal,
	// which the SDK never asks for.
	return false;
#else
	return !LogBustle.IsSuppressed(ToVerbosity(Level));
#endif
}

void FBustleLogSink::write(bustle::client::LogLevel Level, std::string_view Category, std::string_view Message)
{
	const FString Cat = BustleUnreal::ToFString(Category);
	const FString Msg = BustleUnreal::ToFString(Message);
	// UE_LOG needs the verbosity at compile time.
	switch (Level)
	{
	case bustle::client::LogLevel::Trace: UE_LOG(LogBustle, VeryVerbose, TEXT("[%s] %s"), *Cat, *Msg); break;
	case bustle::client::LogLevel::Debug: UE_LOG(LogBustle, Verbose, TEXT("[%s] %s"), *Cat, *Msg); break;
	case bustle::client::LogLevel::Info: UE_LOG(LogBustle, Log, TEXT("[%s] %s"), *Cat, *Msg); break;
	case bustle::client::LogLevel::Warning: UE_LOG(LogBustle, Warning, TEXT("[%s] %s"), *Cat, *Msg); break;
	case bustle::client::LogLevel::Error: UE_LOG(LogBustle, Error, TEXT("[%s] %s"), *Cat, *Msg); break;
	}
}
