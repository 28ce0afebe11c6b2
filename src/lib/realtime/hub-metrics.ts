import type { Metrics } from '../metrics/metrics.ts'
import type { Hub } from './hub.ts'

/** This instance's open sockets, occupied channels, subscriptions and queued bytes, read from the hub when scraped. */
export function registerHubMetrics(metrics: Metrics, hub: Hub): void {
  metrics.gauge({
    name: 'realtime_open_sockets',
    help: 'WebSocket connections open on this instance.',
    read: (set) => set({}, hub.connectionCount()),
  })
  metrics.gauge({
    name: 'realtime_occupied_channels',
    help: 'Channels with at least one socket of this instance subscribed.',
    read: (set) => set({}, hub.channelCount()),
  })
  metrics.gauge({
    name: 'realtime_subscriptions',
    help: 'Channel subscriptions held for the sockets of this instance.',
    read: (set) => set({}, hub.subscriptionCount()),
  })
  metrics.gauge({
    name: 'realtime_buffered_bytes',
    help: 'Bytes queued for the sockets of this instance, not yet taken by the network.',
    read: (set) => set({}, hub.bufferedBytes()),
  })
}
