import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { sharedSerializers } from './serializers.ts'

describe('sharedSerializers', () => {
  it('builds one serializer per distinct schema, each answering by its own schema', async () => {
    const factory = sharedSerializers()
    let built = 0
    const counting: typeof factory = (external, options) => {
      const compile = factory(external, options)
      const seen = new Set<unknown>()
      return (route) => {
        const serialize = compile(route)
        if (!seen.has(serialize)) built++
        seen.add(serialize)
        return serialize
      }
    }
    const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: counting } } })
    const error = { type: 'object', properties: { message: { type: 'string' } } }
    const name = { type: 'object', properties: { name: { type: 'string' } } }
    const age = { type: 'object', properties: { age: { type: 'integer' } } }
    const answer = { name: 'Ada', age: 36, secret: 'x' }
    app.get('/a', { schema: { response: { 200: name, 404: error } } }, async () => answer)
    app.get('/b', { schema: { response: { 200: { ...name }, 404: { ...error } } } }, async () => answer)
    app.get('/c', { schema: { response: { 200: age, 404: error } } }, async () => answer)
    app.get('/d', { schema: { response: { 200: name, 404: error } } }, async (_request, reply) =>
      reply.code(404).send({ message: 'gone', name: 'not in the schema' }),
    )
    await app.ready()

    expect((await app.inject('/a')).json()).toEqual({ name: 'Ada' })
    expect((await app.inject('/b')).json()).toEqual({ name: 'Ada' })
    expect((await app.inject('/c')).json()).toEqual({ age: 36 })
    expect((await app.inject('/d')).json()).toEqual({ message: 'gone' })
    // name, age and error: three serializers for eight route-status pairs (HEAD twins included).
    expect(built).toBe(3)
    await app.close()
  })
})
