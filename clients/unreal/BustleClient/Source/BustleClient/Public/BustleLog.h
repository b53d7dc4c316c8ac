// The plugin's log category. The SDK's LogSink is routed here
// (Private/BustleLogSink.h); the only DEFINE_LOG_CATEGORY is in
// BustleClientModule.cpp.
#pragma once

#include "CoreMinimal.h"

BUSTLECLIENT_API DECLARE_LOG_CATEGORY_EXTERN(LogBustle, Log, All);
