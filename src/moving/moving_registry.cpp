// The per-backend registry of moving-object indexes (see moving.cpp for what
// an index's life is): name -> entry, the session's memory budget, freeing
// every index when the backend exits.
#include "moving/moving.h"

#include "service/service.h"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/acl.h"
#include "utils/memutils.h"
}

static MoEntry* registry = nullptr;
static uint64 next_serial = 1;
static bool exit_callback_registered = false;

int64 mo_session_limit_bytes() { return static_cast<int64>(moving_session_memory_kb) * 1024; }

int64 mo_session_bytes() {
    int64 total = 0;
    for (MoEntry* e = registry; e != nullptr; e = e->next) total += e->index->bytes();
    return total;
}

mo::Index* mo_budgeted(MoEntry* e) {
    mo::MemoryBudget b;
    b.limit = mo_session_limit_bytes();
    b.others = mo_session_bytes() - e->index->bytes();
    e->index->set_budget(b);
    return e->index;
}

static void moving_at_exit(int, Datum) {
    for (MoEntry* e = registry; e != nullptr; e = e->next) {
        delete e->index;  // frees host and device memory; never throws
        e->index = nullptr;
    }
    registry = nullptr;
}

const char* mo_name_arg(FunctionCallInfo fcinfo, const char* fn) {
    char* name = text_to_cstring(PG_GETARG_TEXT_PP(0));
    size_t len = strlen(name);
    if (len == 0) ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s: name must not be empty", fn)));
    if (len >= NAMEDATALEN)
        ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG),
                        errmsg("%s: name must be at most %d bytes long", fn, NAMEDATALEN - 1)));
    return name;
}

MoEntry* mo_find_entry(const char* name) {
    for (MoEntry* e = registry; e != nullptr; e = e->next)
        if (strcmp(e->name, name) == 0) return e;
    return nullptr;
}

MoEntry* mo_lookup(FunctionCallInfo fcinfo, const char* fn) {
    const char* name = mo_name_arg(fcinfo, fn);
    MoEntry* e = mo_find_entry(name);
    if (e == nullptr)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("%s: no moving-object index named \"%s\" in this session", fn, name),
                        errhint("Indexes live in the session that created them with mo_create().")));
    if (!has_privs_of_role(GetUserId(), e->owner))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("%s: moving-object index \"%s\" belongs to another role", fn, name),
                        errdetail("It was created by role %s, whose privileges the current role does not have.",
                                  GetUserNameFromId(e->owner, true) ? GetUserNameFromId(e->owner, true)
                                                                    : "(dropped)")));
    return e;
}

MoEntry* mo_new_entry(const char* name) {
    // The registry entry first (an ERROR here leaks nothing), then the engine.
    MoEntry* e = static_cast<MoEntry*>(MemoryContextAllocZero(TopMemoryContext, sizeof(MoEntry)));
    strlcpy(e->name, name, NAMEDATALEN);
    e->owner = GetUserId();
    if (!exit_callback_registered) {
        on_proc_exit(moving_at_exit, 0);
        exit_callback_registered = true;
    }
    gpu_service_register_session();  // before the engine: the service frees the index if this backend exits
    return e;
}

void mo_add_entry(MoEntry* e, mo::Index* index) {
    e->index = index;
    e->serial = next_serial++;
    e->next = registry;
    registry = e;
}

void mo_remove_entry(MoEntry* e) {
    mo::Index* index = e->index;
    for (MoEntry** p = &registry; *p != nullptr; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    delete index;
    pfree(e);
}
