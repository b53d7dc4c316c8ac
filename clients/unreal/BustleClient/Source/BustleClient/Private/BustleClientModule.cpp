#include "BustleClientModule.h"

#include "BustleLog.h"
#include "Modules/ModuleManager.h"

DEFINE_LOG_CATEGORY(LogBustle);

void FBustleClientModule::StartupModule()
{
	// Nothing global: every SDK object (and its log sink) belongs to a subsystem.
}

void FBustleClientModule::ShutdownModule()
{
}

IMPLEMENT_MODULE(FBustleClientModule, BustleClient)
