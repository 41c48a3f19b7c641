/*
 * ts_citus.h - what the backend needs to know of Citus, the distributed
 * engine of PostgreSQL, where it is installed: which tables keep their rows
 * elsewhere. Nothing here links against Citus; its catalog is read by name.
 */
#ifndef TS_CITUS_H
#define TS_CITUS_H

#include "postgres.h"

/*
 * Whether Citus keeps a table's rows in shards (a distributed, reference or
 * Citus-local table): the table itself is then an empty shell on this node,
 * and only a query through Citus reads its rows. False without Citus.
 */
extern bool ts_citus_table(Oid relid);

#endif							/* TS_CITUS_H */
