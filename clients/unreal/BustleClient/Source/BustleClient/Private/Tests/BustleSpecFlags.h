// Automation flags shared by the plugin's specs. In UE 5.3.2 and 5.4.2
// EAutomationTestFlags is a struct whose enum Type holds the masks
// (EAutomationTestFlags::ApplicationContextMask, Misc/AutomationTest.h);
// 5.5.1 makes it an enum class and declares the mask beside it
// (EAutomationTestFlags_ApplicationContextMask), which its BEGIN_DEFINE_SPEC
// asserts against. Read in those three engine sources (clients/unreal/ENGINE_API.md).
#pragma once

#include "CoreMinimal.h"
#include "Misc/AutomationTest.h"
#include "Runtime/Launch/Resources/Version.h"

#if ENGINE_MAJOR_VERSION > 5 || (ENGINE_MAJOR_VERSION == 5 && ENGINE_MINOR_VERSION >= 5)
#define BUSTLE_SPEC_FLAGS (EAutomationTestFlags_ApplicationContextMask | EAutomationTestFlags::ProductFilter)
#else
#define BUSTLE_SPEC_FLAGS (EAutomationTestFlags::ApplicationContextMask | EAutomationTestFlags::ProductFilter)
#endif
