// Default implementations of IBustleProxy: do nothing, and ready at once.
#include "BustleProxy.h"

void IBustleProxy::OnBustlePooled_Implementation()
{
}

void IBustleProxy::OnBustleActivated_Implementation(const FBustleEntityInfo& /*Entity*/)
{
}

void IBustleProxy::OnBustleDeactivated_Implementation()
{
}

void IBustleProxy::OnBustleVelocity_Implementation(const FVector& /*VelocityCmPerSecond*/)
{
}

void IBustleProxy::OnBustleHintChanged_Implementation(EBustleRepresentation /*Hint*/)
{
}

bool IBustleProxy::IsBustleProxyReady_Implementation() const
{
	return true;
}
