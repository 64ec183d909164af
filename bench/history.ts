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
  /** where the run's wall time went, from the events' own timestamps (ms, summed over the run) */
  time: TimeSplit;
}

/**
 * The server's clock on each hand-off: a task waiting to be picked up (dispatch), a worker running
 * it (activity by type, workflow code), and the gaps between one task's end and the next's start.
 */
export interface TimeSplit {
  activityDispatchMs: number;
  activityRunMs: Record<string, number>;
  workflowTaskDispatchMs: number;
  workflowTaskRunMs: number;
  workflowTasks: number;
  activities: number;
}

function ms(e: proto.temporal.api.history.v1.IHistoryEvent): number {
  const t = e.eventTime;
  return t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;
}

export function splitTime(history: History): TimeSplit {
  const T = temporal.api.enums.v1.EventType;
  const byId = new Map<number, proto.temporal.api.history.v1.IHistoryEvent>();
  const out: TimeSplit = { activityDispatchMs: 0, activityRunMs: {}, workflowTaskDispatchMs: 0, workflowTaskRunMs: 0, workflowTasks: 0, activities: 0 };
  for (const e of history.events ?? []) {
    byId.set(Number(e.eventId), e);
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      out.activityDispatchMs += ms(e) - ms(byId.get(Number(e.activityTaskStartedEventAttributes!.scheduledEventId))!);
    } else if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED || e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_FAILED) {
      const a = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes!;
      const sched = byId.get(Number(a.scheduledEventId))!;
      const name = sched.activityTaskScheduledEventAttributes?.activityType?.name ?? '?';
      out.activityRunMs[name] = round((out.activityRunMs[name] ?? 0) + ms(e) - ms(byId.get(Number(a.startedEventId))!), 1);
      out.activities += 1;
    } else if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      out.workflowTaskDispatchMs += ms(e) - ms(byId.get(Number(e.workflowTaskStartedEventAttributes!.scheduledEventId))!);
    } else if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      out.workflowTaskRunMs += ms(e) - ms(byId.get(Number(e.workflowTaskCompletedEventAttributes!.startedEventId))!);
      out.workflowTasks += 1;
    }
  }
  out.activityDispatchMs = round(out.activityDispatchMs, 1);
  out.workflowTaskDispatchMs = round(out.workflowTaskDispatchMs, 1);
  out.workflowTaskRunMs = round(out.workflowTaskRunMs, 1);
  return out;
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
    time: splitTime(history),
  };
}

/** Where the time from `kiln run`'s spawn to the first model request went, by the server's clock (ms). */
export interface FirstRequestPath {
  /** spawn → the workflow started: the CLI's own start-up, its git and config reads, the start call */
  cliMs: number;
  /** → prepareWorkspace started: the first workflow task and both dispatches */
  toPrepareMs: number;
  prepareMs: number;
  /** prepare done → the first model turn started: a workflow task and both dispatches */
  toTurnMs: number;
  /** the turn started → its request reached the mock: context, prompt and the HTTP call */
  turnToRequestMs: number;
}

/** Both times on the wall clock (performance.timeOrigin + performance.now()). */
export function firstRequestPath(history: History, spawnWallMs: number, requestWallMs: number): FirstRequestPath | undefined {
  const T = temporal.api.enums.v1.EventType;
  const events = history.events ?? [];
  const started = events.find((e) => e.eventType === T.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  const scheduled = new Map<number, string>();
  const times: Record<string, { start?: number; end?: number }> = {};
  for (const e of events) {
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) scheduled.set(Number(e.eventId), e.activityTaskScheduledEventAttributes!.activityType!.name!);
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const name = scheduled.get(Number(e.activityTaskStartedEventAttributes!.scheduledEventId))!;
      (times[name] ??= {}).start ??= ms(e);
    }
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const name = scheduled.get(Number(e.activityTaskCompletedEventAttributes!.scheduledEventId))!;
      (times[name] ??= {}).end ??= ms(e);
    }
  }
  const prep = times.prepareWorkspace;
  const turn = times.agentTurn;
  if (!started || prep?.start === undefined || prep.end === undefined || turn?.start === undefined) return undefined;
  return {
    cliMs: round(ms(started) - spawnWallMs, 1),
    toPrepareMs: round(prep.start - ms(started), 1),
    prepareMs: round(prep.end - prep.start, 1),
    toTurnMs: round(turn.start - prep.end, 1),
    turnToRequestMs: round(requestWallMs - turn.start, 1),
  };
}

/** Where one turn's harness time went (ms): reply N sent → request N+1 received, cut at the run's history events. */
export interface TurnPath {
  /** reply sent → its turn's activity completed: the reply's handling and the calls run ahead */
  replyToDoneMs: number;
  /** → the next workflow task started: completion reaching the server, the task's dispatch */
  toWorkflowMs: number;
  /** the workflow task, started → completed by the server's clock */
  workflowTaskMs: number;
  /** → the next turn's activity started: the schedule and its dispatch */
  toTurnMs: number;
  /** the turn started → its request reached the mock */
  turnToRequestMs: number;
}

/**
 * One TurnPath per hand-off between two agentTurn activities: the last model request of one and
 * the first of the next (an activity may take several turns, activities/run-ahead.ts). Requests
 * belong to the activity whose start and completion they fall between. `replies` are the mock's
 * (doneAt, at) pairs on the wall clock, in request order.
 */
export function turnPaths(history: History, replies: Array<{ at: number; doneAt: number }>): TurnPath[] {
  const T = temporal.api.enums.v1.EventType;
  const scheduled = new Map<number, string>();
  const turns: Array<{ start: number; end?: number }> = [];
  const startedBy = new Map<number, { start: number; end?: number }>();
  const tasks: Array<{ start: number; end?: number }> = [];
  const taskBy = new Map<number, { start: number; end?: number }>();
  for (const e of history.events ?? []) {
    const id = Number(e.eventId);
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) scheduled.set(id, e.activityTaskScheduledEventAttributes!.activityType!.name!);
    else if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const a = e.activityTaskStartedEventAttributes!;
      if (scheduled.get(Number(a.scheduledEventId)) !== 'agentTurn') continue;
      const t = { start: ms(e) };
      turns.push(t);
      startedBy.set(Number(a.scheduledEventId), t);
    } else if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const t = startedBy.get(Number(e.activityTaskCompletedEventAttributes!.scheduledEventId));
      if (t) t.end = ms(e);
    } else if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      const t = { start: ms(e) };
      tasks.push(t);
      taskBy.set(id, t);
    } else if (e.eventType === T.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      const t = taskBy.get(Number(e.workflowTaskCompletedEventAttributes!.startedEventId));
      if (t) t.end = ms(e);
    }
  }
  const out: TurnPath[] = [];
  for (let i = 0; i + 1 < turns.length; i++) {
    const { start, end: done } = turns[i]!;
    const next = turns[i + 1]!;
    // the history's clock is the server's, in whole ms: a request may read a hair before its activity
    let last = -1;
    replies.forEach((r, j) => {
      if (done !== undefined && r.at >= start - 1 && r.at <= done + 1) last = j;
    });
    const task = done === undefined ? undefined : tasks.find((t) => t.start >= done);
    if (last < 0 || last + 1 >= replies.length || done === undefined || !task || task.end === undefined) continue;
    out.push({
      replyToDoneMs: round(done - replies[last]!.doneAt, 1),
      toWorkflowMs: round(task.start - done, 1),
      workflowTaskMs: round(task.end - task.start, 1),
      toTurnMs: round(next.start - task.end, 1),
      turnToRequestMs: round(replies[last + 1]!.at - next.start, 1),
    });
  }
  return out;
}

/** Each activity's completion → the next activity's start (ms): the durable hand-off between two turns. */
export function activityHops(history: History): number[] {
  const T = temporal.api.enums.v1.EventType;
  const out: number[] = [];
  let done: number | undefined;
  for (const e of history.events ?? []) {
    if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) done = ms(e);
    else if (e.eventType === T.EVENT_TYPE_ACTIVITY_TASK_STARTED && done !== undefined) {
      out.push(ms(e) - done);
      done = undefined;
    }
  }
  return out;
}
