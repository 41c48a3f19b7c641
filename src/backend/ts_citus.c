/*
 * ts_citus.c - Citus's tables, known from its catalog (ts_citus.h).
 */
#include "postgres.h"

#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

#include "backend/ts_citus.h"

bool
ts_citus_table(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};

	/* Citus's catalog of the tables it distributes; every role may read it */
	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1::regclass",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_partition");
	return SPI_processed > 0;
}
