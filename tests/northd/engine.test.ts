// The incremental engine on a toy graph (a source of numbers → sum → doubled sum): each handler
// result (handled, unchanged, unhandled, missing handler) takes the path it promises, and the
// per-node counters show recomputes and incremental runs.
import t from 'tap';
import { Engine, erase } from '../../northd/engine.js';
import type { EngineNode, HandlerResult } from '../../northd/engine.js';

interface Box { value: number }
interface Delta { by: number }

function sumNode(mode: { result: HandlerResult }): EngineNode<Box, Delta> {
  return {
    name: 'sum',
    inputs: ['numbers'],
    init: () => ({ value: 0 }),
    newChange: () => ({ by: 0 }),
    isEmpty: (c) => c.by === 0,
    recompute(data, inputs, out) {
      const next = inputs.data<number[]>('numbers').reduce((a, b) => a + b, 0);
      out.by += next - data.value;
      data.value = next;
    },
    handlers: {
      numbers(data, change, _inputs, out) {
        if (mode.result !== 'handled') return mode.result;
        const added = (change as { added: number }).added;
        data.value += added;
        out.by += added;
        return 'handled';
      },
    },
  };
}

const doubleNode: EngineNode<Box, Delta> = {
  name: 'double',
  inputs: ['sum'],
  init: () => ({ value: 0 }),
  newChange: () => ({ by: 0 }),
  isEmpty: (c) => c.by === 0,
  recompute(data, inputs, out) {
    const next = 2 * inputs.data<Box>('sum').value;
    out.by += next - data.value;
    data.value = next;
  },
  handlers: {}, // No handler: every change of sum makes it recompute.
};

t.test('handled, unchanged and unhandled paths with counters', async (t) => {
  const mode: { result: HandlerResult } = { result: 'handled' };
  const engine = new Engine(['numbers'], [erase(sumNode(mode)), erase(doubleNode)]);
  const numbers = [1, 2];
  const run = (change: unknown): Map<string, unknown> => engine.run(new Map([['numbers', { data: numbers, change }]]));

  run(undefined);
  t.same(engine.data<Box>('sum'), { value: 3 });
  t.same(engine.data<Box>('double'), { value: 6 });
  t.same(engine.stats(), { sum: { recomputes: 1, incrementalRuns: 0 }, double: { recomputes: 1, incrementalRuns: 0 } }, 'first run recomputes all');

  numbers.push(4);
  const changes = run({ added: 4 });
  t.same(engine.data<Box>('sum'), { value: 7 });
  t.same(engine.data<Box>('double'), { value: 14 });
  t.same(changes.get('sum'), { by: 4 });
  t.same(engine.stats(), { sum: { recomputes: 1, incrementalRuns: 1 }, double: { recomputes: 2, incrementalRuns: 0 } }, 'handled: incremental; missing handler: recompute');

  mode.result = 'unchanged';
  const none = run({ added: 0 });
  t.equal(none.size, 0, 'unchanged input: no node changes');
  t.same(engine.stats(), { sum: { recomputes: 1, incrementalRuns: 2 }, double: { recomputes: 2, incrementalRuns: 0 } }, 'downstream of an unchanged node does not run');

  mode.result = 'unhandled';
  numbers.push(10);
  run({ added: 10 });
  t.same(engine.data<Box>('sum'), { value: 17 });
  t.same(engine.data<Box>('double'), { value: 34 });
  t.same(engine.stats(), { sum: { recomputes: 2, incrementalRuns: 2 }, double: { recomputes: 3, incrementalRuns: 0 } }, 'unhandled: recompute');

  run(undefined);
  t.same(engine.stats(), { sum: { recomputes: 2, incrementalRuns: 2 }, double: { recomputes: 3, incrementalRuns: 0 } }, 'no input change: nothing runs');
});

t.test('declaration order must be topological; reads must be declared', async (t) => {
  t.throws(() => new Engine([], [erase(doubleNode)]), /input sum is not declared before it/);
  const sneaky: EngineNode<Box, Delta> = {
    ...doubleNode,
    name: 'sneaky',
    inputs: ['numbers'],
    recompute(data, inputs) {
      data.value = inputs.data<Box>('sum').value;
    },
  };
  const engine = new Engine(['numbers'], [erase(sumNode({ result: 'handled' })), erase(sneaky)]);
  t.throws(() => engine.run(new Map([['numbers', { data: [1], change: undefined }]])), /reads undeclared input sum/);
});
