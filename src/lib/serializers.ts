import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'

type SerializerFactory = ReturnType<typeof SerializerSelector>
type Serializer = ReturnType<ReturnType<SerializerFactory>>

/**
 * Fastify's own response serializer factory, building one serializer per distinct schema rather
 * than one per route and status: every route carries the same error responses, so 719 of the 844
 * serializers a start built were copies (100-150 ms and 12-40 MB of each start).
 */
export function sharedSerializers(): SerializerFactory {
  const build = SerializerSelector()
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options)
    const built = new Map<string, Serializer>()
    return (route) => {
      // The schema's JSON is all fast-json-stringify reads of it (external schemas are the factory's).
      const key = JSON.stringify(route.schema)
      let serialize = built.get(key)
      if (!serialize) {
        serialize = compile(route)
        built.set(key, serialize)
      }
      return serialize
    }
  }
}
