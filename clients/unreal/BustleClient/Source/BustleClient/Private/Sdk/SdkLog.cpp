// Compiles the Bustle SDK's src/log.cpp inside this module, from the copy
// that clients/unreal/sync_sdk.py makes (Source/ThirdParty/BustleSDK).
#include "CoreTypes.h"

THIRD_PARTY_INCLUDES_START
#include "src/log.cpp"
THIRD_PARTY_INCLUDES_END
