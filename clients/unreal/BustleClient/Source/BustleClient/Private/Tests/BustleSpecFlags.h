// Automation flags shared by the plugin's specs. UE 5.5 moved the context
// mask out of the enum (EAutomationTestFlags_ApplicationContextMask); this
// split follows the engine's release notes and is not verified here.
#pragma once

#include "CoreMinimal.h"
#include "Misc/AutomationTest.h"
#include "Runtime/Launch/Resources/Version.h"

#if ENGINE_MAJOR_VERSION > 5 || (ENGINE_MAJOR_VERSION == 5 && ENGINE_MINOR_VERSION >= 5)
#define BUSTLE_SPEC_FLAGS (EAutomationTestFlags_ApplicationContextMask | EAutomationTestFlags::ProductFilter)
#else
#define BUSTLE_SPEC_FLAGS (EAutomationTestFlags::ApplicationContextMask | EAutomationTestFlags::ProductFilter)
#endif
