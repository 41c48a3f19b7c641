/*
 * ts_citus.h - what the backend needs to know of Citus, the distributed
 * engine of PostgreSQL, where it is installed: which tables keep their rows
 * elsewhere, and how importance is summed where they are. Nothing here
 * links against Citus; its catalog and functions are reached by name.
 */
#ifndef TS_CITUS_H
#define TS_CITUS_H

#include "postgres.h"

#include "fmgr.h"

/*
 * Whether Citus keeps a table's rows in shards (a distributed, reference or
 * Citus-local table): the table itself is then an empty shell on this node,
 * and only a query through Citus reads its rows. False without Citus.
 */
extern bool ts_citus_table(Oid relid);

/* Whether Citus distributes a table's rows across nodes by hash (not a reference or Citus-local table). */
extern bool ts_citus_distributed(Oid relid);

/*
 * Whether this transaction has written nothing yet, here or (through Citus)
 * on other nodes, outside a transaction block: sessions of their own then see
 * what it sees, and wait on no lock it holds.
 */
extern bool ts_citus_nothing_written(void);

/*
 * feature_importance(model, table, model_output, background) over a table
 * that Citus distributes: each shard's sums computed on the node that holds
 * it, added on this node (treeshap._citus_importance).
 */
extern Datum ts_citus_importance(FunctionCallInfo fcinfo);

#endif							/* TS_CITUS_H */
