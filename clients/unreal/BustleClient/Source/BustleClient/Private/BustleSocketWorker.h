// The transport: an FSocket on a worker FRunnable thread. It connects, sends
// Hello, feeds every received byte to the SDK's FrameReader, decodes Welcome
// / Delta / CommandResult / Error with the SDK's decoders and queues them for
// the game thread (SPSC). Frames the game thread wants sent (built with the
// SDK's messages.hpp) go through an MPSC queue and are written here.
//
// Threading: the worker touches no UObject; it reads only its FOptions copy.
// Stop() sets an atomic flag; every blocking call waits at most
// kPollInterval, so the thread notices within that. StopAndJoin() (game
// thread) is called before the owner goes away and returns once the thread
// has ended.
//
// Back-pressure: with MaxQueuedFrames events waiting for the game thread,
// the worker stops reading; the server then coalesces this client's deltas.
#pragma once

#include "CoreMinimal.h"
#include "Containers/Queue.h"
#include "HAL/Runnable.h"
#include "BustleInbound.h"

#include <atomic>
#include <string>

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
		double ConnectTimeoutSeconds = 3.0;
		double HandshakeTimeoutSeconds = 3.0;
	};

	explicit FBustleSocketWorker(FOptions InOptions);
	virtual ~FBustleSocketWorker() override;

	// Game thread.
	bool Start();
	void StopAndJoin();
	void Send(TArray<uint8>&& Frame);
	bool Dequeue(TUniquePtr<FBustleInboundEvent>& Out);
	bool IsFinished() const { return bFinished.load(); }

	// FRunnable (worker thread, except Stop).
	virtual uint32 Run() override;
	virtual void Stop() override;

private:
	bool Open(FString& Error);
	void Close();
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
