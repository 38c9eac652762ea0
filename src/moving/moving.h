// Moving-object grid indexes (src/moving/), the internal API its files share.
//   moving.cpp           moving_init(): the feature's settings; the SQL functions mo_create,
//                        mo_load, mo_update, mo_delete, mo_range, mo_range_count, mo_info, mo_drop
//   moving_registry.cpp  the per-backend registry of indexes (name -> index), the session's
//                        memory budget, freeing every index when the backend exits
// The indexes themselves live in the engine (src/core/moving.hpp).
#pragma once

#include "runtime/runtime.h"

#include "core/moving.hpp"

namespace mo = approx::moving;

// Defines approx_gpu.moving_max_cells.
void moving_init(void);

extern int moving_session_memory_kb;  // approx_gpu.moving_session_memory

// ---- the registry (moving_registry.cpp) ----------------------------------------------------

struct MoEntry {
    char name[NAMEDATALEN];
    uint64 serial;  // unique per mo_create in this backend
    Oid owner;      // the role that created it: only roles with its privileges use it (SET ROLE)
    mo::Index* index;
    MoEntry* next;
};

int64 mo_session_limit_bytes();
// Bytes held by every index of this session.
int64 mo_session_bytes();
// The index of e with the budget the session's other indexes leave it (set
// before every engine call: the setting or the other indexes may have changed).
mo::Index* mo_budgeted(MoEntry* e);
// Argument 0, the index's name: not empty, shorter than NAMEDATALEN.
const char* mo_name_arg(FunctionCallInfo fcinfo, const char* fn);
MoEntry* mo_find_entry(const char* name);
// The entry named by argument 0; ERROR if there is none, or if the current
// role lacks the privileges of the role that created it (an index holds the
// rows its creator could read: after SET ROLE to a lesser role, or in a
// SECURITY DEFINER function of another role, it is not theirs).
MoEntry* mo_lookup(FunctionCallInfo fcinfo, const char* fn);
// A new entry named name, not in the registry yet (palloc'd in
// TopMemoryContext; pfree it if its index cannot be made). Registers the exit
// callback and the GPU-service session: call it before making the index.
MoEntry* mo_new_entry(const char* name);
// Puts e, now holding index, into the registry with a new serial.
void mo_add_entry(MoEntry* e, mo::Index* index);
// Takes e out of the registry, deletes its index and frees it.
void mo_remove_entry(MoEntry* e);
