#include "BustleClientSubsystem.h"

#include "BustleInbound.h"
#include "BustleLog.h"
#include "BustleSdk.h"
#include "BustleSettings.h"
#include "BustleSocketWorker.h"
#include "BustleUnrealTypes.h"
#include "Containers/Ticker.h"
#include "UObject/Class.h"
#include "UObject/Object.h"
#include "HAL/PlatformProcess.h"
#include "HAL/PlatformTime.h"
#include "Misc/CoreMisc.h"
#include "ProfilingDebugging/CpuProfilerTrace.h"

namespace
{
	// Deinitialize waits at most this long for stopped workers (each notices a
	// stop within its 20 ms poll interval).
	constexpr double kShutdownWaitSeconds = 2.0;

	bool ShouldConnectInThisProcess()
	{
		return bustle::client::should_connect(IsRunningDedicatedServer() ? bustle::client::NetMode::DedicatedServer
																		 : bustle::client::NetMode::Standalone);
	}
}

void UBustleClientSubsystem::Initialize(FSubsystemCollectionBase& Collection)
{
	Super::Initialize(Collection);
	TickHandle = FTSTicker::GetCoreTicker().AddTicker(
		FTickerDelegate::CreateUObject(this, &UBustleClientSubsystem::TickConnection));
	if (GetDefault<UBustleSettings>()->bAutoConnect)
	{
		Connect();
	}
}

void UBustleClientSubsystem::Deinitialize()
{
	FTSTicker::GetCoreTicker().RemoveTicker(TickHandle);
	TickHandle.Reset();
	bWantConnection = false;
	StopWorker(TEXT("the game instance ends"));
	ReapRetired(/*bWait=*/true);
	Pending.Reset();
	Welcome.Reset();
	Consumer.Reset();
	Super::Deinitialize();
}

void UBustleClientSubsystem::Connect(const FString& Host, int32 Port)
{
	if (!ShouldConnectInThisProcess())
	{
		UE_LOG(LogBustle, Log, TEXT("a dedicated server does not connect to Bustle"));
		return;
	}
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	TargetHost = Host.IsEmpty() ? Settings->Host : Host;
	TargetPort = Port > 0 ? Port : Settings->Port;
	bWantConnection = true;
	// The consumer hears that the old connection ended before the new one
	// starts, so it never sends on the new one what belonged to the old.
	StopWorker(TEXT("disconnected by the client (Connect)"));
	StartWorker();
}

void UBustleClientSubsystem::Disconnect()
{
	bWantConnection = false;
	StopWorker(TEXT("disconnected by the client"));
}

void UBustleClientSubsystem::StartWorker()
{
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	FBustleSocketWorker::FOptions Options;
	Options.Host = TargetHost;
	Options.Port = TargetPort;
	Options.Token = BustleUnreal::ToStd(Settings->Token);
	Options.ClientName = BustleUnreal::ToStd(Settings->ClientName);
	Options.MaxQueuedFrames = FMath::Max(16, Settings->MaxQueuedFrames);
	UE_LOG(LogBustle, Log, TEXT("connecting to %s:%d"), *TargetHost, TargetPort);
	Worker = new FBustleSocketWorker(MoveTemp(Options));
	State = EBustleConnectionState::Connecting;
	LastError.Reset();
	TSharedPtr<FBustleInboundEvent> Connecting = MakeShared<FBustleInboundEvent>();
	Connecting->Kind = FBustleInboundEvent::EKind::Connecting;
	Connecting->ReceiveUs = BustleTime::NowUs();
	Deliver(Connecting);
	if (!Worker->Start())
	{
		LastError = TEXT("could not start the socket thread");
		UE_LOG(LogBustle, Error, TEXT("%s"), *LastError);
		delete Worker;
		Worker = nullptr;
		State = EBustleConnectionState::Disconnected;
	}
}

void UBustleClientSubsystem::StopWorker(const FString& Why)
{
	if (Worker != nullptr)
	{
		Worker->RequestStop();
		Retired.Add(Worker);  // deleted by ReapRetired once its thread has ended
		Worker = nullptr;
	}
	if (State != EBustleConnectionState::Disconnected)
	{
		// The retired worker's own events are dropped: this one stands for them.
		TSharedPtr<FBustleInboundEvent> Event = MakeShared<FBustleInboundEvent>();
		Event->Kind = FBustleInboundEvent::EKind::Disconnected;
		Event->Message = Why;
		Event->ReceiveUs = BustleTime::NowUs();
		State = EBustleConnectionState::Disconnected;
		Welcome.Reset();
		Deliver(Event);
		OnDisconnected.Broadcast(Why);
	}
}

void UBustleClientSubsystem::ReapRetired(bool bWait)
{
	const double Deadline = FPlatformTime::Seconds() + (bWait ? kShutdownWaitSeconds : 0.0);
	while (Retired.Num() > 0)
	{
		for (int32 I = Retired.Num() - 1; I >= 0; --I)
		{
			if (Retired[I]->TryJoin())
			{
				delete Retired[I];
				Retired.RemoveAtSwap(I);
			}
		}
		if (!bWait || Retired.Num() == 0)
		{
			return;
		}
		if (FPlatformTime::Seconds() > Deadline)
		{
			// Deleting a worker whose thread still runs would block (the
			// thread's destructor waits for it) or free what it uses: it is
			// left to end on its own; its memory is not reclaimed.
			UE_LOG(LogBustle, Error, TEXT("%d socket worker(s) did not stop within %.1f s; left to end on their own"),
				Retired.Num(), kShutdownWaitSeconds);
			Retired.Reset();
			return;
		}
		FPlatformProcess::Sleep(0.005f);
	}
}

void UBustleClientSubsystem::SetConsumer(UObject* InConsumer)
{
	Consumer = InConsumer;
	Pending.Reset();  // a new consumer subscribes again and starts from a baseline
}

void UBustleClientSubsystem::ReleaseConsumer(const UObject* InConsumer)
{
	if (Consumer.Get() == InConsumer)
	{
		Consumer.Reset();
		Pending.Reset();
	}
}

uint32 UBustleClientSubsystem::NextRequestId()
{
	if (++RequestCounter == 0)
	{
		++RequestCounter;
	}
	return RequestCounter;
}

void UBustleClientSubsystem::SendFrame(TArray<uint8>&& Frame)
{
	if (Worker != nullptr && State != EBustleConnectionState::Disconnected)
	{
		Worker->Send(MoveTemp(Frame));
	}
}

void UBustleClientSubsystem::Deliver(const TSharedPtr<FBustleInboundEvent>& Event)
{
	// Only a registered consumer gets the stream; without one, Deltas are
	// dropped (the next consumer subscribes again and gets a baseline).
	if (Consumer.IsValid())
	{
		Pending.Add(Event);
	}
}

void UBustleClientSubsystem::Pump()
{
	if (Worker == nullptr)
	{
		return;
	}
	TUniquePtr<FBustleInboundEvent> Received;
	while (Worker != nullptr && Worker->Dequeue(Received))
	{
		TSharedPtr<FBustleInboundEvent> Event(Received.Release());
		switch (Event->Kind)
		{
		case FBustleInboundEvent::EKind::Welcome:
			State = EBustleConnectionState::Connected;
			UE_LOG(LogBustle, Log, TEXT("connected: server %s, scenario %s, %d lanes, %d archetypes"),
				*BustleUnreal::ToFString(Event->Welcome.server_version),
				*BustleUnreal::ToFString(Event->Welcome.scenario_id),
				static_cast<int32>(Event->Welcome.lanes.size()), static_cast<int32>(Event->Welcome.archetypes.size()));
			Welcome = Event;  // shared with the consumer; nobody mutates events
			Deliver(Event);
			OnConnected.Broadcast(BustleUnreal::ToFString(Event->Welcome.server_version),
				BustleUnreal::ToFString(Event->Welcome.scenario_id));
			break;
		case FBustleInboundEvent::EKind::ServerError:
			LastError = Event->Message;
			UE_LOG(LogBustle, Error, TEXT("%s"), *LastError);
			Deliver(Event);
			break;
		case FBustleInboundEvent::EKind::Disconnected:
			if (LastError.IsEmpty())
			{
				LastError = Event->Message;
			}
			UE_LOG(LogBustle, Warning, TEXT("disconnected: %s"), *Event->Message);
			State = EBustleConnectionState::Disconnected;
			Welcome.Reset();
			ReconnectAtSeconds = FPlatformTime::Seconds() + GetDefault<UBustleSettings>()->ReconnectDelaySeconds;
			Deliver(Event);
			// The worker has ended: it is retired (never joined here).
			Worker->RequestStop();
			Retired.Add(Worker);
			Worker = nullptr;
			OnDisconnected.Broadcast(Event->Message);
			break;
		default:
			Deliver(Event);
			break;
		}
	}
}

void UBustleClientSubsystem::TakeEvents(TArray<TSharedPtr<FBustleInboundEvent>>& Out)
{
	Pump();
	Out = MoveTemp(Pending);
	Pending.Reset();
}

bool UBustleClientSubsystem::TickConnection(float /*DeltaSeconds*/)
{
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_ClientTick);
	if (!Consumer.IsValid())
	{
		Pump();  // keep the queue short and notice disconnects without a world
	}
	ReapRetired(/*bWait=*/false);
	if (bWantConnection && Worker == nullptr && State == EBustleConnectionState::Disconnected &&
		FPlatformTime::Seconds() >= ReconnectAtSeconds)
	{
		StartWorker();
	}
	return true;
}
