// The SDK's LogSink routed to UE_LOG(LogBustle, ...). Levels: Trace ->
// VeryVerbose, Debug -> Verbose, Info -> Log, Warning -> Warning, Error ->
// Error. Nothing maps to Fatal: an SDK error never crashes the game. The SDK
// writes only from the thread that drives the representation layer (the
// game thread); UE_LOG is thread-safe regardless.
#pragma once

#include "CoreMinimal.h"
#include "BustleSdk.h"

class FBustleLogSink final : public bustle::client::LogSink
{
public:
	virtual void write(bustle::client::LogLevel Level, std::string_view Category, std::string_view Message) override;
	virtual bool enabled(bustle::client::LogLevel Level) const override;
};
