// Compiles the Bustle SDK's src/engine_glue.cpp inside this module, from the copy
// that clients/unreal/sync_sdk.py makes (Source/ThirdParty/BustleSDK).
#include "CoreTypes.h"

THIRD_PARTY_INCLUDES_START
#include "src/engine_glue.cpp"
THIRD_PARTY_INCLUDES_END
