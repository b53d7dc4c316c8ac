// The transport: an FSocket on a worker FRunnable thread. It connects, sends
// Hello, feeds every received byte to the SDK's FrameReader, decodes Welcome
// / Delta / CommandResult / Error with the SDK's decoders and queues them for
// the game thread (SPSC). Frames the game thread wants sent (built with the
// SDK's messages.hpp) go through an MPSC queue and are written here.
//
// Threading: the worker touches no UObject; it reads only its FOptions copy.
// RequestStop() / Stop() set an atomic flag. Nothing the worker does blocks
// longer than kPollInterval: the socket stays non-blocking for its whole
// life (connect, Hello, receive, send all poll with Wait), and the host name
// is resolved asynchronously (GetAddressInfoAsync; its answer after a stop
// goes to a shared state nobody reads). The game thread never waits for it:
// the owner retires a stopped worker and deletes it once TryJoin() says the
// thread has ended (deleting an FRunnableThread whose thread runs blocks).
//
// Back-pressure: with MaxQueuedFrames events waiting for the game thread,
// the worker stops reading; the server then coalesces this client's deltas.
#pragma once

#include "CoreMinimal.h"
#include "BustleInbound.h"
#include "Containers/Queue.h"
#include "HAL/Runnable.h"
#include "Templates/SharedPointer.h"
#include "Templates/UniquePtr.h"

#include <atomic>
#include <string>

class FInternetAddr;
class ISocketSubsystem;
class FRunnableThread;
class FSocket;

class FBustleSocketWorker final : public FRunnable
{
public:
	struct FOptions
	{
		FString Host;
		int32 Port = 0;
		std::string Token;
		std::string ClientName;
		int32 MaxQueuedFrames = 1024;
		double ResolveTimeoutSeconds = 5.0;
		double ConnectTimeoutSeconds = 3.0;
		double HandshakeTimeoutSeconds = 3.0;
		double SendTimeoutSeconds = 5.0;  // a frame the server does not take within this ends the connection
	};

	explicit FBustleSocketWorker(FOptions InOptions);
	virtual ~FBustleSocketWorker() override;

	// Game thread.
	bool Start();
	// Asks the thread to end; returns at once.
	void RequestStop();
	// True once the thread has ended (then safe to delete); never waits for a running one.
	bool TryJoin();
	void Send(TArray<uint8>&& Frame);
	bool Dequeue(TUniquePtr<FBustleInboundEvent>& Out);
	bool IsFinished() const { return bFinished.load(); }

	// FRunnable (worker thread, except Stop).
	virtual uint32 Run() override;
	virtual void Stop() override;

private:
	struct FResolveState;
	// The resolved address; nullptr (Error set) when resolution failed or the worker stops.
	TSharedPtr<FInternetAddr> Resolve(ISocketSubsystem& Sockets, FString& Error);
	bool Open(FString& Error);
	void Close();
	// Writes all of Data, waiting for the socket in kPollInterval steps; false
	// when the connection failed, the send timed out or the worker stops.
	bool SendAll(const uint8* Data, int32 Size);
	bool FlushOutbound();
	// False when the connection must end (Message set).
	bool HandleFrame(const bustle::client::ReadResult& Frame, int64 ReceiveUs, FString& Message);
	void Push(TUniquePtr<FBustleInboundEvent> Event);
	void PushDisconnected(const FString& Why);

	FOptions Options;
	FSocket* Socket = nullptr;  // worker thread only
	FRunnableThread* Thread = nullptr;
	std::atomic<bool> bStopping{false};
	std::atomic<bool> bFinished{false};
	std::atomic<int32> QueuedEvents{0};
	bool bWelcomed = false;
	bustle::client::FrameReader Reader;
	TQueue<TUniquePtr<FBustleInboundEvent>, EQueueMode::Spsc> Inbound;
	TQueue<TArray<uint8>, EQueueMode::Mpsc> Outbound;
};
