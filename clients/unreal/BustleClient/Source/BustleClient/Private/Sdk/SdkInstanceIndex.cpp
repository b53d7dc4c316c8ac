// Compiles the Bustle SDK's src/instance_index.cpp inside this module, from the copy
// that clients/unreal/sync_sdk.py makes (Source/ThirdParty/BustleSDK).
#include "CoreTypes.h"

THIRD_PARTY_INCLUDES_START
#include "src/instance_index.cpp"
THIRD_PARTY_INCLUDES_END
