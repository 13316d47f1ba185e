/*
 * kvblob/kvblob.h: the whole driver ABI in one include.
 *
 * kvblob is the boundary between an LLM inference engine and the byte
 * stores that hold its KV-cache blocks. A store vendor compiles a driver
 * against these headers alone and ships a shared object that exports
 * kvblob_plugin_negotiate (entry.h); an engine loads it through the host
 * library. The behaviour every driver promises is the contract, rule by
 * rule (R-... ids cited throughout): docs/contract.md in the source tree,
 * share/doc/kvblob-dev/contract.md under the install prefix. Every other
 * header that says "contract.md" means that file.
 */
#ifndef KVBLOB_KVBLOB_H
#define KVBLOB_KVBLOB_H

#include "version.h"
#include "status.h"
#include "types.h"
#include "driver.h"
#include "entry.h"
#include "scenarios.h"

#endif /* KVBLOB_KVBLOB_H */
