// UBustleClientSubsystem: the connection to a Bustle server, one per game
// instance, so it survives map travel. It owns the socket worker thread
// (FSocket + the SDK's FrameReader, no Asio) and the game-thread side of its
// queues, reconnects after a delay, and keeps the latest Welcome. It holds
// no world object: drawing belongs to UBustleWorldSubsystem, which registers
// as the consumer of the stream and takes the decoded frames each tick.
// SDK types stay out of this header (FBustleInboundEvent is private; it is
// held through TSharedPtr, which needs no complete type here, and the worker
// through a raw pointer owned and deleted by this class).
//
// Never blocks the game thread: a stopped worker is retired and deleted by
// a later tick once its thread has ended (every wait of the worker is at most
// 20 ms; name resolution is asynchronous). Only Deinitialize waits, bounded.
// A dedicated server never connects (the SDK's should_connect).
#pragma once

#include "CoreMinimal.h"
#include "Containers/Ticker.h"
#include "Containers/Array.h"
#include "Containers/UnrealString.h"
#include "Delegates/DelegateCombinations.h"
#include "Subsystems/GameInstanceSubsystem.h"
#include "Subsystems/SubsystemCollection.h"
#include "Templates/SharedPointer.h"
#include "UObject/WeakObjectPtrTemplates.h"
#include "BustleClientSubsystem.generated.h"

class FBustleSocketWorker;
class UObject;
struct FBustleInboundEvent;

UENUM(BlueprintType)
enum class EBustleConnectionState : uint8
{
	Disconnected,
	Connecting,  // socket open or handshake under way
	Connected,   // Welcome received
};

/** A Welcome arrived: the server's version and scenario. */
DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(FBustleConnectedSignature, const FString&, ServerVersion, const FString&,
	ScenarioId);
/** The connection ended (Reason says why); a reconnect follows unless Disconnect() was called. */
DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(FBustleDisconnectedSignature, const FString&, Reason);

UCLASS(Transient)
class BUSTLECLIENT_API UBustleClientSubsystem : public UGameInstanceSubsystem
{
	GENERATED_BODY()

public:
	virtual void Initialize(FSubsystemCollectionBase& Collection) override;
	virtual void Deinitialize() override;

	/** Connects to Host:Port (empty Host or Port 0: the project settings, Project Settings > Plugins >
	 *  Bustle Client). A connection already open is closed first (OnDisconnected fires for it). Does
	 *  nothing on a dedicated server. */
	UFUNCTION(BlueprintCallable, Category = "Bustle")
	void Connect(const FString& Host = TEXT(""), int32 Port = 0);

	/** Closes the connection and stops reconnecting until Connect() is called again. */
	UFUNCTION(BlueprintCallable, Category = "Bustle")
	void Disconnect();

	UPROPERTY(BlueprintAssignable, Category = "Bustle")
	FBustleConnectedSignature OnConnected;

	UPROPERTY(BlueprintAssignable, Category = "Bustle")
	FBustleDisconnectedSignature OnDisconnected;

	UFUNCTION(BlueprintPure, Category = "Bustle")
	EBustleConnectionState GetConnectionState() const { return State; }

	/** Why the last connection ended (empty while connected). */
	UFUNCTION(BlueprintPure, Category = "Bustle")
	FString GetLastError() const { return LastError; }

	// --- Plugin-internal (game thread) ---------------------------------------
	/** The object that takes the stream from now on; others get nothing. */
	void SetConsumer(UObject* Consumer);
	/** Clears the consumer if it is still `Consumer` (a newer one stays). */
	void ReleaseConsumer(const UObject* Consumer);
	/** Decoded frames and connection events since the last call, oldest first. */
	void TakeEvents(TArray<TSharedPtr<FBustleInboundEvent>>& Out);
	/** The Welcome of the current connection, null before it. */
	const FBustleInboundEvent* GetWelcome() const { return Welcome.Get(); }
	/** Queues a complete frame (length prefix included) for the worker to send. */
	void SendFrame(TArray<uint8>&& Frame);
	/** A fresh request id (never 0: 0 asks the server for no answer). */
	uint32 NextRequestId();

private:
	bool TickConnection(float DeltaSeconds);
	void Pump();
	// Stops the worker without waiting: it is retired and deleted once its thread ended.
	void StopWorker(const FString& Why);
	void StartWorker();
	void ReapRetired(bool bWait);
	void Deliver(const TSharedPtr<FBustleInboundEvent>& Event);

	FBustleSocketWorker* Worker = nullptr;  // owned: created in StartWorker, retired in StopWorker
	TArray<FBustleSocketWorker*> Retired;   // owned: stopped, thread not ended yet
	FString TargetHost;                     // of the connection wanted (Connect's or the settings')
	int32 TargetPort = 0;
	TSharedPtr<FBustleInboundEvent> Welcome;
	TArray<TSharedPtr<FBustleInboundEvent>> Pending;
	TWeakObjectPtr<UObject> Consumer;
	FTSTicker::FDelegateHandle TickHandle;
	EBustleConnectionState State = EBustleConnectionState::Disconnected;
	FString LastError;
	bool bWantConnection = false;
	double ReconnectAtSeconds = 0.0;
	uint32 RequestCounter = 0;
};
