// IBustleRenderBackend: a backend a project writes itself, in engine types,
// and installs for a representation with
// UBustleWorldSubsystem::SetCustomBackend. The plugin adapts it to the SDK's
// RenderBackend (the SDK stays private to the module), so the SDK's layer
// drives it like the built-in ones: activate, poses per frame, deactivate,
// with the same fallback and cover rules (an entity it refuses is drawn by
// the next coarser backend).
#pragma once

#include "CoreMinimal.h"
#include "BustleTypes.h"

class UWorld;

enum class EBustleActivation : uint8
{
	Active,   // drawn from now on
	Pending,  // not yet (a resource loads): asked again next frame
	Refused,  // cannot draw this entity: the next coarser backend does
};

class BUSTLECLIENT_API IBustleRenderBackend
{
public:
	virtual ~IBustleRenderBackend() = default;

	/** Short name for logs. */
	virtual FName GetBackendName() const = 0;
	/** Installed in World; false (after logging why) refuses the installation. */
	virtual bool InitializeBackend(UWorld& World) { return true; }
	/** Removed, after every entity it drew was deactivated. */
	virtual void DeinitializeBackend() {}
	/** Entity is to be drawn, starting at Initial (world space). */
	virtual EBustleActivation Activate(const FBustleEntityInfo& Entity, const FTransform& Initial) = 0;
	/** Entity (Slot) is no longer drawn here. */
	virtual void Deactivate(int32 Slot) = 0;
	/** The interpolated transform of an entity it draws, once per frame. */
	virtual void SetTransform(int32 Slot, const FTransform& Transform) = 0;
	/** Whether Slot is drawn (false after Activate: asked again next frame). */
	virtual bool IsActive(int32 Slot) const { return true; }
	virtual void BeginFrame() {}
	virtual void EndFrame() {}
};
