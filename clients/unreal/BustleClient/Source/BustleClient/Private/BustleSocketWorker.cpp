#include "BustleSocketWorker.h"

#include "AddressInfoTypes.h"
#include "BustleLog.h"
#include "BustleUnrealTypes.h"
#include "HAL/PlatformProcess.h"
#include "HAL/PlatformTime.h"
#include "HAL/RunnableThread.h"
#include "IPAddress.h"
#include "Misc/Optional.h"
#include "Misc/ScopeLock.h"
#include "Misc/Timespan.h"
#include "Sockets.h"
#include "SocketTypes.h"
#include "SocketSubsystem.h"

#include <span>

namespace
{
	// Every blocking wait of the worker is at most this long, so Stop() is
	// noticed within it.
	const FTimespan kPollInterval = FTimespan::FromMilliseconds(20);
	constexpr int32 kReceiveChunk = 64 * 1024;
}

FBustleSocketWorker::FBustleSocketWorker(FOptions InOptions)
	: Options(MoveTemp(InOptions))
{
}

// What GetAddressInfoAsync answers into: shared with its callback, which may
// run after the worker is gone.
struct FBustleSocketWorker::FResolveState
{
	FCriticalSection Lock;
	TOptional<FAddressInfoResult> Result;
};

FBustleSocketWorker::~FBustleSocketWorker()
{
	// The owner deletes a worker only after TryJoin() said its thread ended.
	check(Thread == nullptr || bFinished.load());
	if (Thread != nullptr)
	{
		Thread->WaitForCompletion();  // Run() has returned: only the thread's exit is left
		delete Thread;
		Thread = nullptr;
	}
}

bool FBustleSocketWorker::Start()
{
	check(IsInGameThread());
	if (Thread != nullptr)
	{
		return true;
	}
	Thread = FRunnableThread::Create(this, TEXT("BustleSocketWorker"), 0, TPri_Normal);
	return Thread != nullptr;
}

void FBustleSocketWorker::RequestStop()
{
	Stop();
}

bool FBustleSocketWorker::TryJoin()
{
	if (Thread == nullptr)
	{
		return true;
	}
	if (!bFinished.load())
	{
		return false;
	}
	Thread->WaitForCompletion();  // Run() has returned: only the thread's exit is left
	delete Thread;
	Thread = nullptr;
	return true;
}

void FBustleSocketWorker::Stop()
{
	bStopping.store(true);
}

void FBustleSocketWorker::Send(TArray<uint8>&& Frame)
{
	Outbound.Enqueue(MoveTemp(Frame));
}

bool FBustleSocketWorker::Dequeue(TUniquePtr<FBustleInboundEvent>& Out)
{
	if (!Inbound.Dequeue(Out))
	{
		return false;
	}
	QueuedEvents.fetch_sub(1);
	return true;
}

void FBustleSocketWorker::Push(TUniquePtr<FBustleInboundEvent> Event)
{
	QueuedEvents.fetch_add(1);
	Inbound.Enqueue(MoveTemp(Event));
}

void FBustleSocketWorker::PushDisconnected(const FString& Why)
{
	TUniquePtr<FBustleInboundEvent> Event = MakeUnique<FBustleInboundEvent>();
	Event->Kind = FBustleInboundEvent::EKind::Disconnected;
	Event->Message = Why;
	Event->ReceiveUs = BustleTime::NowUs();
	Push(MoveTemp(Event));
}

TSharedPtr<FInternetAddr> FBustleSocketWorker::Resolve(ISocketSubsystem& Sockets, FString& Error)
{
	// Asynchronous, so a stop is noticed while a name server does not answer.
	TSharedRef<FResolveState> State = MakeShared<FResolveState>();
	Sockets.GetAddressInfoAsync(
		[State](FAddressInfoResult Result)
		{
		FScopeLock Guard(&State->Lock);
		State->Result.Emplace(MoveTemp(Result));
		},
		*Options.Host, nullptr, EAddressInfoFlags::Default, NAME_None, ESocketType::SOCKTYPE_Streaming);
	const double Deadline = FPlatformTime::Seconds() + Options.ResolveTimeoutSeconds;
	while (!bStopping.load())
	{
		{
			FScopeLock Guard(&State->Lock);
			if (State->Result.IsSet())
			{
				const FAddressInfoResult& Result = State->Result.GetValue();
				if (Result.ReturnCode != SE_NO_ERROR || Result.Results.Num() == 0)
				{
					Error = FString::Printf(TEXT("cannot resolve host '%s'"), *Options.Host);
					return nullptr;
				}
				return Result.Results[0].Address->Clone();
			}
		}
		if (FPlatformTime::Seconds() > Deadline)
		{
			Error = FString::Printf(TEXT("no answer resolving '%s' within %.1f s"), *Options.Host,
				Options.ResolveTimeoutSeconds);
			return nullptr;
		}
		FPlatformProcess::Sleep(static_cast<float>(kPollInterval.GetTotalSeconds()));
	}
	Error = TEXT("stopped while resolving the host");
	return nullptr;
}

bool FBustleSocketWorker::Open(FString& Error)
{
	ISocketSubsystem* Sockets = ISocketSubsystem::Get(PLATFORM_SOCKETSUBSYSTEM);
	if (Sockets == nullptr)
	{
		Error = TEXT("no socket subsystem on this platform");
		return false;
	}
	const TSharedPtr<FInternetAddr> Address = Resolve(*Sockets, Error);
	if (!Address.IsValid())
	{
		return false;
	}
	Address->SetPort(Options.Port);

	Socket = Sockets->CreateSocket(NAME_Stream, TEXT("Bustle client"), Address->GetProtocolType());
	if (Socket == nullptr)
	{
		Error = TEXT("cannot create a TCP socket");
		return false;
	}
	Socket->SetNoDelay(true);
	// Non-blocking for the socket's whole life: every wait below is a Wait()
	// of at most kPollInterval, so Stop() is noticed while connecting,
	// sending and receiving alike.
	Socket->SetNonBlocking(true);
	Socket->Connect(*Address);
	const double Deadline = FPlatformTime::Seconds() + Options.ConnectTimeoutSeconds;
	while (!bStopping.load())
	{
		if (Socket->Wait(ESocketWaitConditions::WaitForWrite, kPollInterval))
		{
			break;
		}
		if (FPlatformTime::Seconds() > Deadline)
		{
			Error = FString::Printf(TEXT("no connection to %s:%d within %.1f s"), *Options.Host, Options.Port,
				Options.ConnectTimeoutSeconds);
			return false;
		}
	}
	if (bStopping.load())
	{
		Error = TEXT("stopped while connecting");
		return false;
	}
	if (Socket->GetConnectionState() != SCS_Connected)
	{
		Error = FString::Printf(TEXT("connection to %s:%d refused or failed"), *Options.Host, Options.Port);
		return false;
	}
	return true;
}

void FBustleSocketWorker::Close()
{
	if (Socket != nullptr)
	{
		Socket->Close();
		ISocketSubsystem::Get(PLATFORM_SOCKETSUBSYSTEM)->DestroySocket(Socket);
		Socket = nullptr;
	}
}

bool FBustleSocketWorker::SendAll(const uint8* Data, int32 Size)
{
	ISocketSubsystem* Sockets = ISocketSubsystem::Get(PLATFORM_SOCKETSUBSYSTEM);
	const double Deadline = FPlatformTime::Seconds() + Options.SendTimeoutSeconds;
	int32 Offset = 0;
	while (Offset < Size)
	{
		if (bStopping.load() || FPlatformTime::Seconds() > Deadline)
		{
			return false;
		}
		int32 Sent = 0;
		if (Socket->Send(Data + Offset, Size - Offset, Sent) && Sent > 0)
		{
			Offset += Sent;
			continue;
		}
		// A non-blocking socket whose send buffer is full says "would block":
		// wait until it can take more (the server reads slower than we send).
		if (Sockets == nullptr || Sockets->GetLastErrorCode() != SE_EWOULDBLOCK)
		{
			return false;
		}
		Socket->Wait(ESocketWaitConditions::WaitForWrite, kPollInterval);
	}
	return true;
}

bool FBustleSocketWorker::FlushOutbound()
{
	TArray<uint8> Frame;
	while (Outbound.Dequeue(Frame))
	{
		if (!SendAll(Frame.GetData(), Frame.Num()))
		{
			return false;
		}
	}
	return true;
}

bool FBustleSocketWorker::HandleFrame(const bustle::client::ReadResult& Frame, int64 ReceiveUs, FString& Message)
{
	namespace bc = bustle::client;
	namespace wire = bustle::wire;
	const wire::ServerFrame& Root = *Frame.frame;
	TUniquePtr<FBustleInboundEvent> Event = MakeUnique<FBustleInboundEvent>();
	Event->ReceiveUs = ReceiveUs;

	if (const wire::Error* Err = Root.message_as_Error())
	{
		Message = FString::Printf(TEXT("server error %s: %s"),
			UTF8_TO_TCHAR(wire::EnumNameErrorCode(Err->code())),
			Err->message() ? UTF8_TO_TCHAR(Err->message()->c_str()) : TEXT(""));
		Event->Kind = FBustleInboundEvent::EKind::ServerError;
		Event->Message = Message;
		Push(MoveTemp(Event));
		return false;
	}
	if (!bWelcomed)
	{
		const wire::Welcome* Welcome = Root.message_as_Welcome();
		if (Welcome == nullptr)
		{
			Message = FString::Printf(TEXT("expected Welcome after Hello, got %s"),
				UTF8_TO_TCHAR(wire::EnumNameServerMessage(Root.message_type())));
			return false;
		}
		Event->Welcome = bc::to_welcome_info(*Welcome);
		if (Event->Welcome.protocol_version != bustle::proto::kProtocolVersion)
		{
			Message = FString::Printf(TEXT("server speaks protocol %d, this client %d"),
				Event->Welcome.protocol_version, bustle::proto::kProtocolVersion);
			return false;
		}
		Event->Kind = FBustleInboundEvent::EKind::Welcome;
		bWelcomed = true;
		Push(MoveTemp(Event));
		return true;
	}
	switch (Root.message_type())
	{
	case wire::ServerMessage::Delta:
	{
		const std::string Error = bc::decode_delta(*Root.message_as_Delta(), Event->Delta);
		if (!Error.empty())
		{
			Message = FString::Printf(TEXT("undecodable Delta: %s"), UTF8_TO_TCHAR(Error.c_str()));
			return false;
		}
		Event->Kind = FBustleInboundEvent::EKind::Delta;
		Push(MoveTemp(Event));
		return true;
	}
	case wire::ServerMessage::CommandResult:
		Event->Kind = FBustleInboundEvent::EKind::Reply;
		Event->Reply = bc::to_command_reply(*Root.message_as_CommandResult());
		Push(MoveTemp(Event));
		return true;
	default:
		// JobUpdate / SpawnUpdate: this client sends no command that makes them.
		return true;
	}
}

uint32 FBustleSocketWorker::Run()
{
	FString Why;
	if (!Open(Why))
	{
		Close();
		PushDisconnected(Why);
		bFinished.store(true);
		return 1;
	}

	bustle::client::HelloParams Hello;
	Hello.client_name = Options.ClientName;
	Hello.token = Options.Token;
	const bustle::client::Frame HelloFrame = bustle::client::build_hello(Hello);
	if (!SendAll(HelloFrame.data(), static_cast<int32>(HelloFrame.size())))
	{
		Close();
		PushDisconnected(TEXT("could not send Hello"));
		bFinished.store(true);
		return 1;
	}

	const double HandshakeDeadline = FPlatformTime::Seconds() + Options.HandshakeTimeoutSeconds;
	TArray<uint8> Buffer;
	Buffer.SetNumUninitialized(kReceiveChunk);
	while (!bStopping.load())
	{
		if (!FlushOutbound())
		{
			Why = TEXT("send failed; the server closed the connection");
			break;
		}
		if (!bWelcomed && FPlatformTime::Seconds() > HandshakeDeadline)
		{
			Why = TEXT("no Welcome within the handshake timeout");
			break;
		}
		if (QueuedEvents.load() >= Options.MaxQueuedFrames)
		{
			// The game thread is behind: stop reading until it catches up.
			FPlatformProcess::Sleep(static_cast<float>(kPollInterval.GetTotalSeconds()));
			continue;
		}
		if (!Socket->Wait(ESocketWaitConditions::WaitForRead, kPollInterval))
		{
			continue;
		}
		int32 Read = 0;
		// Non-blocking: true with 0 bytes is "nothing yet"; false is a closed
		// or failed connection.
		if (!Socket->Recv(Buffer.GetData(), Buffer.Num(), Read))
		{
			Why = TEXT("the server closed the connection");
			break;
		}
		if (Read <= 0)
		{
			continue;
		}
		const int64 ReceiveUs = BustleTime::NowUs();
		Reader.feed(std::span<const uint8>(Buffer.GetData(), static_cast<std::size_t>(Read)));
		bool bKeepGoing = true;
		while (bKeepGoing)
		{
			const bustle::client::ReadResult Frame = Reader.next();
			if (Frame.status == bustle::client::ReadStatus::NeedMore)
			{
				break;
			}
			if (bustle::client::is_error(Frame.status))
			{
				Why = FString::Printf(TEXT("bad frame from the server (%s): %s"),
					UTF8_TO_TCHAR(bustle::client::to_string(Frame.status)), UTF8_TO_TCHAR(Frame.error.c_str()));
				bKeepGoing = false;
				break;
			}
			bKeepGoing = HandleFrame(Frame, ReceiveUs, Why);
		}
		if (!bKeepGoing)
		{
			break;
		}
	}
	if (bStopping.load() && Why.IsEmpty())
	{
		Why = TEXT("disconnected by the client");
	}
	Close();
	PushDisconnected(Why);
	bFinished.store(true);
	return 0;
}
