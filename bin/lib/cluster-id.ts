// Where a member keeps its cluster id, and the id of one that was given none: shared by
// `central`, `up` and `snapshot restore`, and light enough for `up` to load.

/** The file in a member's data folder holding its cluster id, from its first start on. */
export const clusterIdFile = 'cluster-id';
/** The cluster id of a member given none whose folder keeps none (members started by hand). */
export const defaultClusterId = 'ovnts';
