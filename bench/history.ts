/**
 * How much workflow history a run leaves, and how far that is from the server's hard limits.
 * Size is the protobuf encoding of the whole History, which is what the server counts.
 */
import proto from '@temporalio/proto';
import { round } from './stats.js';

const { temporal } = proto;
type History = proto.temporal.api.history.v1.IHistory;

/** Temporal server defaults (limit.historyCount.error, limit.historySize.error): past these the run is terminated. */
export const HISTORY_EVENT_LIMIT = 51_200;
export const HISTORY_BYTE_LIMIT = 50 * 1024 * 1024;

export interface HistoryFigures {
  events: number;
  bytes: number;
  turns: number;
  eventsPerTurn: number;
  bytesPerTurn: number;
  /** the whole run's events and bytes are charged to its turns (start, prepare, verify, finalize included) */
  turnsToEventLimit: number;
  turnsToByteLimit: number;
  /** most frequent event types, for reading where the events go */
  byType: Record<string, number>;
}

export function measureHistory(history: History, turns: number): HistoryFigures {
  const events = history.events ?? [];
  const bytes = temporal.api.history.v1.History.encode(history).finish().length;
  const byType: Record<string, number> = {};
  for (const e of events) {
    const name = (temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
    byType[name] = (byType[name] ?? 0) + 1;
  }
  const eventsPerTurn = events.length / turns;
  const bytesPerTurn = bytes / turns;
  return {
    events: events.length,
    bytes,
    turns,
    eventsPerTurn: round(eventsPerTurn, 1),
    bytesPerTurn: Math.round(bytesPerTurn),
    turnsToEventLimit: Math.floor(HISTORY_EVENT_LIMIT / eventsPerTurn),
    turnsToByteLimit: Math.floor(HISTORY_BYTE_LIMIT / bytesPerTurn),
    byType: Object.fromEntries(Object.entries(byType).sort((a, b) => b[1] - a[1])),
  };
}
