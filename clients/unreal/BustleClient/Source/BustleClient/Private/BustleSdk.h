// The SDK headers the plugin's private code uses, included once here between
// THIRD_PARTY_INCLUDES_START/END. Never included from Public/.
#pragma once

#include "CoreMinimal.h"

THIRD_PARTY_INCLUDES_START
// frame_reader.hpp before messages.hpp (ReadStatus::Frame vs the Frame alias under -Wshadow).
#include "bustle/client/frame_reader.hpp"
#include "bustle/client/actor_pool.hpp"
#include "bustle/client/backend.hpp"
#include "bustle/client/engine_glue.hpp"
#include "bustle/client/instance_index.hpp"
#include "bustle/client/interpolation.hpp"
#include "bustle/client/lease.hpp"
#include "bustle/client/log.hpp"
#include "bustle/client/messages.hpp"
#include "bustle/client/presentation.hpp"
#include "bustle/client/replies.hpp"
#include "bustle/client/representation.hpp"
#include "bustle/client/session.hpp"
#include "bustle/client/stream.hpp"
THIRD_PARTY_INCLUDES_END
