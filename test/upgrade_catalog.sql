-- The extension's catalog as text, one line per property, for comparing two
-- installs (test/upgrade_check.sh): every member object with its definition,
-- labels, privileges and comment, the config tables' dump filters, the version.
\pset format unaligned
\pset tuples_only on
WITH ext AS (SELECT oid, extversion, extconfig, extcondition FROM pg_extension WHERE extname = 'pg_treeshap'),
members AS (SELECT d.classid, d.objid FROM pg_depend d, ext
             WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
SELECT line FROM (
    SELECT 'version ' || extversion AS line FROM ext
    UNION ALL
    SELECT 'config ' || c::regclass::text || ' ' || coalesce(f, '')
      FROM ext, unnest(extconfig, extcondition) AS u(c, f)
    UNION ALL
    SELECT 'member ' || pg_describe_object(classid, objid, 0) FROM members
    UNION ALL
    SELECT 'comment ' || pg_describe_object(classid, objid, 0) || ': ' || obj_description(objid, classid::regclass::text)
      FROM members WHERE obj_description(objid, classid::regclass::text) IS NOT NULL
    UNION ALL
    SELECT 'function ' || pg_get_functiondef(p.oid) || ' acl ' || coalesce(p.proacl::text, '')
      FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
    UNION ALL
    SELECT 'relation ' || c.oid::regclass::text || ' ' || c.relkind::text || ' acl ' || coalesce(c.relacl::text, '')
           || coalesce(' view ' || pg_get_viewdef(c.oid), '')
      FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
    UNION ALL
    SELECT 'column ' || a.attrelid::regclass::text || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
           || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
           || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
      FROM members m JOIN pg_attribute a ON m.classid = 'pg_class'::regclass AND a.attrelid = m.objid
      LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
     WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'constraint ' || conrelid::regclass::text || ' ' || pg_get_constraintdef(co.oid)
      FROM members m JOIN pg_constraint co ON m.classid = 'pg_class'::regclass AND co.conrelid = m.objid
    UNION ALL
    SELECT 'index ' || pg_get_indexdef(i.indexrelid)
      FROM members m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
    UNION ALL
    SELECT 'enum ' || e.enumtypid::regtype::text || ' ' || e.enumlabel || ' ' || e.enumsortorder
      FROM members m JOIN pg_enum e ON m.classid = 'pg_type'::regclass AND e.enumtypid = m.objid
) l ORDER BY line;
