#include "BustleClientSubsystem.h"

#include "BustleInbound.h"
#include "BustleLog.h"
#include "BustleSettings.h"
#include "BustleSocketWorker.h"
#include "BustleUnrealTypes.h"

void UBustleClientSubsystem::Initialize(FSubsystemCollectionBase& Collection)
{
	Super::Initialize(Collection);
	TickHandle = FTSTicker::GetCoreTicker().AddTicker(
		FTickerDelegate::CreateUObject(this, &UBustleClientSubsystem::Tick));
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
	StopWorker();
	Pending.Reset();
	Welcome.Reset();
	Consumer.Reset();
	Super::Deinitialize();
}

void UBustleClientSubsystem::Connect()
{
	bWantConnection = true;
	StopWorker();
	StartWorker();
}

void UBustleClientSubsystem::Disconnect()
{
	bWantConnection = false;
	StopWorker();
	State = EBustleConnectionState::Disconnected;
}

void UBustleClientSubsystem::StartWorker()
{
	const UBustleSettings* Settings = GetDefault<UBustleSettings>();
	FBustleSocketWorker::FOptions Options;
	Options.Host = Settings->Host;
	Options.Port = Settings->Port;
	Options.Token = BustleUnreal::ToStd(Settings->Token);
	Options.ClientName = BustleUnreal::ToStd(Settings->ClientName);
	Options.MaxQueuedFrames = FMath::Max(16, Settings->MaxQueuedFrames);
	UE_LOG(LogBustle, Log, TEXT("connecting to %s:%d"), *Settings->Host, Settings->Port);
	Worker = new FBustleSocketWorker(MoveTemp(Options));
	State = EBustleConnectionState::Connecting;
	LastError.Reset();
	if (!Worker->Start())
	{
		LastError = TEXT("could not start the socket thread");
		UE_LOG(LogBustle, Error, TEXT("%s"), *LastError);
		delete Worker;
		Worker = nullptr;
		State = EBustleConnectionState::Disconnected;
	}
}

void UBustleClientSubsystem::StopWorker()
{
	if (Worker != nullptr)
	{
		Worker->StopAndJoin();
		delete Worker;
		Worker = nullptr;
	}
	Welcome.Reset();
	Pending.Reset();
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

void UBustleClientSubsystem::Pump()
{
	if (Worker == nullptr)
	{
		return;
	}
	TUniquePtr<FBustleInboundEvent> Received;
	while (Worker->Dequeue(Received))
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
			break;
		case FBustleInboundEvent::EKind::ServerError:
			LastError = Event->Message;
			UE_LOG(LogBustle, Error, TEXT("%s"), *LastError);
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
			break;
		default:
			break;
		}
		// Only a registered consumer gets the stream; without one, Deltas are
		// dropped (the next consumer subscribes again and gets a baseline).
		if (Consumer.IsValid())
		{
			Pending.Add(Event);
		}
	}
	if (State == EBustleConnectionState::Disconnected && Worker != nullptr && Worker->IsFinished())
	{
		Worker->StopAndJoin();
		delete Worker;
		Worker = nullptr;
	}
}

void UBustleClientSubsystem::TakeEvents(TArray<TSharedPtr<FBustleInboundEvent>>& Out)
{
	Pump();
	Out = MoveTemp(Pending);
	Pending.Reset();
}

bool UBustleClientSubsystem::Tick(float /*DeltaSeconds*/)
{
	TRACE_CPUPROFILER_EVENT_SCOPE(Bustle_ClientTick);
	if (!Consumer.IsValid())
	{
		Pump();  // keep the queue short and notice disconnects without a world
	}
	if (bWantConnection && Worker == nullptr && State == EBustleConnectionState::Disconnected &&
		FPlatformTime::Seconds() >= ReconnectAtSeconds)
	{
		StartWorker();
	}
	return true;
}
