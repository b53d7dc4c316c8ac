// The BustleClient runtime module. It owns no state: the connection lives in
// UBustleClientSubsystem (per game instance), the drawing in
// UBustleWorldSubsystem (per world).
#pragma once

#include "CoreMinimal.h"
#include "Modules/ModuleInterface.h"

class FBustleClientModule final : public IModuleInterface
{
public:
	virtual void StartupModule() override;
	virtual void ShutdownModule() override;
};
