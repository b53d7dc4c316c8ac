// Compiles the Bustle SDK's proto/src/motion.cpp inside this module, from the
// copy that clients/unreal/sync_sdk.py makes (Source/ThirdParty/BustleSDK).
#include "CoreTypes.h"

THIRD_PARTY_INCLUDES_START
#include "proto/src/motion.cpp"
THIRD_PARTY_INCLUDES_END
