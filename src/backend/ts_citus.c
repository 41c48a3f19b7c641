/*
 * ts_citus.c - Citus's tables, known from its catalog, and importance over
 * a distributed table summed where its shards lie (ts_citus.h).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "backend/ts_citus.h"

/* Whether pg_dist_partition lists the table, with this distribution method when one is given. */
static bool
listed(Oid relid, const char *method)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		args[2] = {ObjectIdGetDatum(relid), CStringGetTextDatum(method ? method : "")};

	/* Citus's catalog of the tables it distributes; every role may read it */
	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return false;
	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_dist_partition "
							  "WHERE logicalrelid = $1::regclass AND ($2 = '' OR partmethod::text = $2)",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_partition");
	return SPI_processed > 0;
}

bool
ts_citus_table(Oid relid)
{
	return listed(relid, NULL);
}

bool
ts_citus_distributed(Oid relid)
{
	bool		distributed;

	SPI_connect();
	distributed = listed(relid, "h");
	SPI_finish();
	return distributed;
}

bool
ts_citus_nothing_written(void)
{
	bool		fresh;
	bool		isnull;

	/* a local write assigns a transaction id; a distributed one, Citus's transaction number */
	if (IsTransactionBlock() || TransactionIdIsValid(GetTopTransactionIdIfAny()))
		return false;
	SPI_connect();
	if (SPI_execute("SELECT (pg_catalog.get_current_transaction_id()).transaction_number = 0",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read Citus's transaction number");
	fresh = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	fresh = fresh && !isnull;
	SPI_finish();
	return fresh;
}

Datum
ts_citus_importance(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[4] = {TEXTOID, REGCLASSOID, get_fn_expr_argtype(fcinfo->flinfo, 2), TEXTOID};
	Datum		args[4] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), PG_GETARG_DATUM(3)};
	char		nulls[4] = {' ', ' ', PG_ARGISNULL(2) ? 'n' : ' ', PG_ARGISNULL(3) ? 'n' : ' '};

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	if (SPI_execute_with_args("SELECT * FROM treeshap._citus_importance($1, $2, $3, $4, treeshap._citus_settings())",
							  4, argtypes, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not sum importance over the shards");
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
	SPI_finish();
	return (Datum) 0;
}
