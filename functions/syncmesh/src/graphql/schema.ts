/**
 * The two GraphQL schemas of the function. Names follow the original Syncmesh function so that
 * its clients keep working. Resolvers live in ../resolvers/.
 */
import { buildSchema, printSchema, type GraphQLSchema } from 'graphql';
import { METRICS } from '../data/partials.js';
import type { SensorField } from '../data/sensors.js';
import { DateTimeScalar } from './datetime.js';

/** A reading's fields in the order the schema lists them, with their GraphQL types: Sensor, SensorInput and SensorUpdate are these. */
const READING_FIELDS: readonly (readonly [SensorField, string])[] = [
  ['sensor_id', 'Int'],
  ['location', 'Int'],
  ['lat', 'Float'],
  ['lon', 'Float'],
  ['timestamp', 'DateTime'],
  ['temperature', 'Float'],
  ['humidity', 'Float'],
  ['pressure', 'Float'],
];

/** The reading's fields as SDL lines; those in `required` are non-null. */
function readingFields(required: readonly SensorField[] = []): string {
  return READING_FIELDS.map(([field, type]) => `${field}: ${type}${required.includes(field) ? '!' : ''}`).join('\n    ');
}

/** SensorAggregate's statistics: each of average, min, max (null without readings) and sum of each metric. */
const AGGREGATE_FIELDS = (['average', 'min', 'max', 'sum'] as const)
  .flatMap((stat) => METRICS.map((metric) => `${stat}_${metric}: Float${stat === 'sum' ? '!' : ''}`))
  .join('\n    ');

export const DATA_SDL = /* GraphQL */ `
  "ISO-8601 date-time; without a zone it is UTC."
  scalar DateTime

  "One reading of one sensor."
  type Sensor {
    _id: ID!
    ${readingFields()}
  }

  "Exact statistics over every matching reading on every node that answered."
  type SensorAggregate {
    count: Int!
    ${AGGREGATE_FIELDS}
  }

  type Query {
    """
    Readings between start_time and end_time (inclusive), ordered by timestamp.
    limit applies mesh-wide: the first \`limit\` readings by timestamp across all nodes.
    With request_type "aggregate" the answer is one element whose numeric fields are the
    mesh-wide averages.
    """
    sensors(start_time: DateTime, end_time: DateTime, limit: Int, sensor_id: Int): [Sensor!]!
    "count, average, min, max and sum of the readings, computed in each node's database and merged exactly."
    sensorsAggregate(start_time: DateTime, end_time: DateTime, sensor_id: Int): SensorAggregate!
    "One reading by its _id (the first node that has it answers)."
    sensor(_id: ID!): Sensor
    "Estimated number of readings (sum over the nodes)."
    docEstimate: Int!
  }

  input SensorInput {
    ${readingFields(['lat', 'lon', 'timestamp'])}
  }

  input SensorUpdate {
    ${readingFields()}
  }

  "Mutations change this node's own database only; they are never forwarded."
  type Mutation {
    "Inserts readings; returns their _ids."
    addSensors(sensors: [SensorInput!]!): [ID!]!
    "Sets the given fields of one reading; returns it, or null when there is no such reading."
    update(_id: ID!, sensor: SensorUpdate!): Sensor
    "Deletes one reading; returns it, or null when there was none."
    deleteSensor(_id: ID!): Sensor
    "Deletes the readings between start_time and end_time (inclusive); returns how many."
    deleteInTimeRange(start_time: DateTime!, end_time: DateTime!): Int!
  }
`;

export const META_SDL = /* GraphQL */ `
  "A node of the mesh as this node's registry knows it."
  type Node {
    id: ID!
    "URL of the node's Syncmesh function, e.g. http://10.0.0.2:8080/function/syncmesh-fn"
    address: String!
    lat: Float!
    lon: Float!
    "km from the own node (haversine); null while no own node is registered"
    distance: Float
    own_node: Boolean!
    "true: this node replicates its writes to that node"
    subscribed: Boolean!
  }

  input NodeInput {
    id: ID!
    address: String!
    lat: Float!
    lon: Float!
    own_node: Boolean = false
    subscribed: Boolean = false
    "with subscribed: first copy this node's existing readings to the new subscriber"
    initial_sync: Boolean = true
  }

  input NodePatch {
    address: String
    lat: Float
    lon: Float
    own_node: Boolean
    subscribed: Boolean
    "when subscribed turns true: first copy this node's existing readings to the new subscriber"
    initial_sync: Boolean = true
  }

  type Query {
    "Registered nodes, nearest first; filter by flags or by radius (km) around the own node."
    nodes(own_node: Boolean, subscribed: Boolean, radius: Float): [Node!]!
    node(id: ID!): Node
    ownNode: Node
  }

  "Registry changes must be signed with the mesh secret."
  type Mutation {
    addNode(node: NodeInput!): Node!
    updateNode(id: ID!, node: NodePatch!): Node!
    deleteNode(id: ID!): Boolean!
  }
`;

function withDateTime(schema: GraphQLSchema): GraphQLSchema {
  const type = schema.getType('DateTime');
  if (type) Object.assign(type, { serialize: DateTimeScalar.serialize, parseValue: DateTimeScalar.parseValue, parseLiteral: DateTimeScalar.parseLiteral });
  return schema;
}

export const dataSchema: GraphQLSchema = withDateTime(buildSchema(DATA_SDL));
export const metaSchema: GraphQLSchema = buildSchema(META_SDL);

/**
 * The schemas' SDL for download (GET /schema.graphql and /meta-schema.graphql): what
 * graphql-codegen, Postman or an IDE plugin read instead of sending an introspection query.
 */
export const SDL_FILES: Readonly<Record<string, string>> = {
  '/schema.graphql': printSchema(dataSchema),
  '/meta-schema.graphql': printSchema(metaSchema),
};
