// Our OVN schemas in RFC 7047 form. Everything that needs a schema as data (the engine, the
// server's get_schema, `ovnts schema`) takes it from here; the DSL and the per-database
// definitions stay private to ovsdb/schemas/.
import { toSchemaJson } from './dsl.js';
import type { SchemaJson } from './dsl.js';
import { NB_SCHEMA } from './ovn-nb.js';
import { SB_SCHEMA } from './ovn-sb.js';

export type {
  AtomicType, BaseTypeJson, ColumnSchemaJson, SchemaJson, TableSchemaJson, TypeJson, TypeObjectJson,
} from './dsl.js';

/** OVN_Northbound 7.0.0 (OVN 23.03), deeply frozen. */
export const NB_SCHEMA_JSON: SchemaJson = toSchemaJson(NB_SCHEMA);

/** OVN_Southbound 20.27.0 (OVN 23.03), deeply frozen. */
export const SB_SCHEMA_JSON: SchemaJson = toSchemaJson(SB_SCHEMA);

const BY_NAME: ReadonlyMap<string, SchemaJson> = new Map([
  ['nb', NB_SCHEMA_JSON],
  ['OVN_Northbound', NB_SCHEMA_JSON],
  ['sb', SB_SCHEMA_JSON],
  ['OVN_Southbound', SB_SCHEMA_JSON],
]);

/** The schema for `db`: 'nb' or 'OVN_Northbound', 'sb' or 'OVN_Southbound'. Throws otherwise. */
export function schemaJsonFor(db: string): SchemaJson {
  const json = BY_NAME.get(db);
  if (json === undefined) {
    throw new Error(`unknown database ${JSON.stringify(db)}: expected one of ${[...BY_NAME.keys()].join(', ')}`);
  }
  return json;
}
