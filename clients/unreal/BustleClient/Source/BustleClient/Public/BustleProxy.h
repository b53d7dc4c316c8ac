// IBustleProxy: what a pooled proxy actor implements (in C++ or Blueprint) to
// learn which entity it draws. The plugin's actor factory calls it; an actor
// class without it is still moved and shown, it only learns nothing.
//
// Order for one pooled actor:
//   OnBustlePooled           once, after it was spawned (deferred: before
//                            BeginPlay) and parked: hidden, no collision, no
//                            tick, its movement components and AI
//                            controller off
//   OnBustleActivated        it draws Entity from now on (shown, placed)
//   OnBustleVelocity         every frame after its pose was set (cm/s, the
//                            motion on screen: for animation blueprints)
//   OnBustleHintChanged      the server's hint for its entity changed while
//                            it draws it (it goes once the new backend draws)
//   OnBustleDeactivated      back in the pool (hidden again)
// IsBustleProxyReady: false while the actor is not ready to be seen (meshes
// streaming in); an instance or marker stands in for it meanwhile.
#pragma once

#include "CoreMinimal.h"
#include "UObject/Interface.h"
#include "BustleTypes.h"
#include "BustleProxy.generated.h"

UINTERFACE(MinimalAPI, Blueprintable)
class UBustleProxy : public UInterface
{
	GENERATED_BODY()
};

class BUSTLECLIENT_API IBustleProxy
{
	GENERATED_BODY()

public:
	UFUNCTION(BlueprintNativeEvent, BlueprintCallable, Category = "Bustle")
	void OnBustlePooled();

	UFUNCTION(BlueprintNativeEvent, BlueprintCallable, Category = "Bustle")
	void OnBustleActivated(const FBustleEntityInfo& Entity);

	UFUNCTION(BlueprintNativeEvent, BlueprintCallable, Category = "Bustle")
	void OnBustleDeactivated();

	UFUNCTION(BlueprintNativeEvent, BlueprintCallable, Category = "Bustle")
	void OnBustleVelocity(const FVector& VelocityCmPerSecond);

	UFUNCTION(BlueprintNativeEvent, BlueprintCallable, Category = "Bustle")
	void OnBustleHintChanged(EBustleRepresentation Hint);

	UFUNCTION(BlueprintNativeEvent, BlueprintCallable, Category = "Bustle")
	bool IsBustleProxyReady() const;
};
