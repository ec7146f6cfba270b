/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`dist/tests/cluster/scenarios.test.js > TAP > check-quorum.txt > trace 1`] = `
> # Check-quorum: a leader cut off from a majority steps down within two election timeouts
> # (the first check still counts the activity it saw before the cut), and the majority side
> # elects a new leader in a higher term.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> partition 1 | 2 3
> tick 1 10
> stabilize
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
> status
  1: leader term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3) progress={1: match=2 next=3 replicate, 2: match=2 next=3 replicate, 3: match=2 next=3 replicate}
  2: follower term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3)
  3: follower term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3)
> tick 1 10
> stabilize
  ready 1:
    role follower lead=0
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
  1->2 heartbeat term=2 commit=2 (cut)
  1->3 heartbeat term=2 commit=2 (cut)
> status
  1: follower term=2 lead=0 commit=2 applied=2 log=1..2 voters=(1 2 3)
  2: follower term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3)
  3: follower term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3)
> # Nodes 2 and 3 stop hearing from a leader. Once node 3's lease on the old leader has run
> # out, node 2 times out and wins.
> tick 3 10
> tick 2 20
> stabilize
  ready 2:
    role pre-candidate lead=0
  2->1 pre-vote term=3 last=2/2 (cut)
  2->3 pre-vote term=3 last=2/2
  3->2 pre-vote-resp term=3 grant
  ready 2:
    role candidate lead=0
    hard state term=3 vote=2 commit=2
  2->1 vote term=3 last=2/2 (cut)
  2->3 vote term=3 last=2/2
  ready 3:
    role follower lead=0
    hard state term=3 vote=2 commit=2
  3->2 vote-resp term=3 grant
  ready 2:
    role leader lead=2
    persist [3/3 empty]
  2->1 app term=3 prev=2/2 commit=2 entries=[3/3 empty] (cut)
  2->3 app term=3 prev=2/2 commit=2 entries=[3/3 empty]
  ready 3:
    role follower lead=2
    persist [3/3 empty]
  3->2 app-resp term=3 index=3
  ready 2:
    hard state term=3 vote=2 commit=3
    apply 3/3 empty
  2->3 app term=3 prev=3/3 commit=3 entries=[]
  ready 3:
    hard state term=3 vote=2 commit=3
    apply 3/3 empty
  3->2 app-resp term=3 index=3
> status
  1: follower term=2 lead=0 commit=2 applied=2 log=1..2 voters=(1 2 3)
  2: leader term=3 lead=2 commit=3 applied=3 log=1..3 voters=(1 2 3) progress={1: match=0 next=3 probe, 2: match=3 next=4 replicate, 3: match=3 next=4 replicate}
  3: follower term=3 lead=2 commit=3 applied=3 log=1..3 voters=(1 2 3)
> heal
> # The deposed leader hears the new term and follows.
> tick 2 1
> stabilize
  2->1 heartbeat term=3 commit=0
  2->3 heartbeat term=3 commit=3
  ready 1:
    role follower lead=2
    hard state term=3 vote=0 commit=2
  1->2 heartbeat-resp term=3
  3->2 heartbeat-resp term=3
  2->1 app term=3 prev=2/2 commit=3 entries=[3/3 empty]
  ready 1:
    hard state term=3 vote=0 commit=3
    persist [3/3 empty]
    apply 3/3 empty
  1->2 app-resp term=3 index=3
> status
  1: follower term=3 lead=2 commit=3 applied=3 log=1..3 voters=(1 2 3)
  2: leader term=3 lead=2 commit=3 applied=3 log=1..3 voters=(1 2 3) progress={1: match=3 next=4 replicate, 2: match=3 next=4 replicate, 3: match=3 next=4 replicate}
  3: follower term=3 lead=2 commit=3 applied=3 log=1..3 voters=(1 2 3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > crash-restart.txt > trace 1`] = `
> # A crash loses what was not persisted: node 2 receives entries but crashes before its
> # Ready is handled, so it never acknowledged them and does not have them after restart.
> # The election timeout can be changed at run time through the log.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> propose 1 a
  accepted 2/3
> process-ready 1
  ready 1:
    persist [2/3 "a"]
> deliver 2
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "a"]
> crash 2
> restart 2
  restarted 2: term=2 vote=1 commit=2 last=2
> stabilize
  ready 2:
    apply 1/1 bootstrap(1 2 3), 2/2 empty
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "a"]
  ready 3:
    persist [2/3 "a"]
  3->1 app-resp term=2 index=3
  ready 1:
    hard state term=2 vote=1 commit=3
    apply 2/3 "a"
  1->2 app term=2 prev=2/3 commit=3 entries=[]
  1->3 app term=2 prev=2/3 commit=3 entries=[]
  ready 2:
    role follower lead=1
  ready 3:
    hard state term=2 vote=1 commit=3
    apply 2/3 "a"
  2->1 app-resp term=2 reject index=3 hint=2/2
  3->1 app-resp term=2 index=3
  1->2 app term=2 prev=2/2 commit=3 entries=[2/3 "a"]
  ready 2:
    hard state term=2 vote=1 commit=3
    persist [2/3 "a"]
    apply 2/3 "a"
  2->1 app-resp term=2 index=3
> tick 1 1
> stabilize
  1->2 heartbeat term=2 commit=3
  1->3 heartbeat term=2 commit=3
  2->1 heartbeat-resp term=2
  3->1 heartbeat-resp term=2
> log 2
  2: snapshot=none [1/1 bootstrap(1 2 3), 2/2 empty, 2/3 "a"]
> set-election-ticks 20
  via 1: accepted 2/4
> stabilize
  ready 1:
    persist [2/4 set-election-ticks(20)]
  1->2 app term=2 prev=2/3 commit=3 entries=[2/4 set-election-ticks(20)]
  1->3 app term=2 prev=2/3 commit=3 entries=[2/4 set-election-ticks(20)]
  ready 2:
    persist [2/4 set-election-ticks(20)]
  ready 3:
    persist [2/4 set-election-ticks(20)]
  2->1 app-resp term=2 index=4
  3->1 app-resp term=2 index=4
  ready 1:
    hard state term=2 vote=1 commit=4
    apply 2/4 set-election-ticks(20)
  1->2 app term=2 prev=2/4 commit=4 entries=[]
  1->3 app term=2 prev=2/4 commit=4 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=4
    apply 2/4 set-election-ticks(20)
  ready 3:
    hard state term=2 vote=1 commit=4
    apply 2/4 set-election-ticks(20)
  2->1 app-resp term=2 index=4
  3->1 app-resp term=2 index=4
> status
  1: leader term=2 lead=1 commit=4 applied=4 log=1..4 voters=(1 2 3) electionTicks=20 progress={1: match=4 next=5 replicate, 2: match=4 next=5 replicate, 3: match=4 next=5 replicate}
  2: follower term=2 lead=1 commit=4 applied=4 log=1..4 voters=(1 2 3) electionTicks=20
  3: follower term=2 lead=1 commit=4 applied=4 log=1..4 voters=(1 2 3) electionTicks=20

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > election.txt > trace 1`] = `
> # Three founding voters; node 1 campaigns (pre-vote, then vote) and wins.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> status
  1: leader term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3) progress={1: match=2 next=3 replicate, 2: match=2 next=3 replicate, 3: match=2 next=3 replicate}
  2: follower term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3)
  3: follower term=2 lead=1 commit=2 applied=2 log=1..2 voters=(1 2 3)
> propose 1 hello
  accepted 2/3
> stabilize
  ready 1:
    persist [2/3 "hello"]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "hello"]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "hello"]
  ready 2:
    persist [2/3 "hello"]
  ready 3:
    persist [2/3 "hello"]
  2->1 app-resp term=2 index=3
  3->1 app-resp term=2 index=3
  ready 1:
    hard state term=2 vote=1 commit=3
    apply 2/3 "hello"
  1->2 app term=2 prev=2/3 commit=3 entries=[]
  1->3 app term=2 prev=2/3 commit=3 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=3
    apply 2/3 "hello"
  ready 3:
    hard state term=2 vote=1 commit=3
    apply 2/3 "hello"
  2->1 app-resp term=2 index=3
  3->1 app-resp term=2 index=3
> status
  1: leader term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3) progress={1: match=3 next=4 replicate, 2: match=3 next=4 replicate, 3: match=3 next=4 replicate}
  2: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)
  3: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > figure-8.txt > trace 1`] = `
> # Raft paper, figure 8: a leader must not commit an entry of an earlier term by counting
> # replicas, because a later leader that never had it may still be elected and overwrite it.
> # Pre-vote and check-quorum are off and one entry goes per message, so that the script
> # controls each step.
> add-nodes 5 entriesPerMessageMax=1 preVote=false checkQuorum=false
  nodes 1 2 3 4 5: voters=(1 2 3 4 5)
> campaign 1
> stabilize
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
    apply 1/1 bootstrap(1 2 3 4 5)
  ready 2:
    apply 1/1 bootstrap(1 2 3 4 5)
  ready 3:
    apply 1/1 bootstrap(1 2 3 4 5)
  ready 4:
    apply 1/1 bootstrap(1 2 3 4 5)
  ready 5:
    apply 1/1 bootstrap(1 2 3 4 5)
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  1->4 vote term=2 last=1/1
  1->5 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  ready 4:
    hard state term=2 vote=1 commit=1
  ready 5:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  4->1 vote-resp term=2 grant
  5->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->4 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->5 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  ready 4:
    role follower lead=1
    persist [2/2 empty]
  ready 5:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  4->1 app-resp term=2 index=2
  5->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  1->4 app term=2 prev=2/2 commit=2 entries=[]
  1->5 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 4:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 5:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  4->1 app-resp term=2 index=2
  5->1 app-resp term=2 index=2
> # (a) Node 1 leads term 2 and gets "a" (2/3) only to node 2.
> partition 1 2 | 3 4 5
> propose 1 a
  accepted 2/3
> stabilize
  ready 1:
    persist [2/3 "a"]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "a"]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "a"] (cut)
  1->4 app term=2 prev=2/2 commit=2 entries=[2/3 "a"] (cut)
  1->5 app term=2 prev=2/2 commit=2 entries=[2/3 "a"] (cut)
  ready 2:
    persist [2/3 "a"]
  2->1 app-resp term=2 index=3
> # (b) Node 1 crashes. Node 5 wins term 3 with 3 and 4, appends 3/3 and "b" (3/4), and crashes
> # before replicating them.
> crash 1
> heal
> partition 2 | 3 4 5
> campaign 5
> process-ready 5
  ready 5:
    role candidate lead=0
    hard state term=3 vote=5 commit=2
> deliver 3 4
  5->3 vote term=3 last=2/2
  5->4 vote term=3 last=2/2
> process-ready 3 4
  ready 3:
    role follower lead=0
    hard state term=3 vote=5 commit=2
  ready 4:
    role follower lead=0
    hard state term=3 vote=5 commit=2
> deliver 5
  3->5 vote-resp term=3 grant
  4->5 vote-resp term=3 grant
> propose 5 b
  accepted 3/4
> process-ready 5
  ready 5:
    role leader lead=5
    persist [3/3 empty, 3/4 "b"]
> crash 5
> heal
> status
  1: down (disk term=2 commit=2 last=3)
  2: follower term=2 lead=1 commit=2 applied=2 log=1..3 voters=(1 2 3 4 5)
  3: follower term=3 lead=0 commit=2 applied=2 log=1..2 voters=(1 2 3 4 5)
  4: follower term=3 lead=0 commit=2 applied=2 log=1..2 voters=(1 2 3 4 5)
  5: down (disk term=3 commit=2 last=4)
> # (c) Node 1 restarts and wins term 4 with 2, 3 and 4. It copies the term-2 entry 2/3 to node 3,
> # so 2/3 is on a majority (1, 2, 3), while its own empty entry 4/4 reaches only node 2.
> restart 1
  restarted 1: term=2 vote=1 commit=2 last=3
> campaign 1
> stabilize
  ready 1:
    role candidate lead=0
    hard state term=3 vote=1 commit=2
    apply 1/1 bootstrap(1 2 3 4 5), 2/2 empty
  1->2 vote term=3 last=2/3
  1->3 vote term=3 last=2/3
  1->4 vote term=3 last=2/3
  1->5 vote term=3 last=2/3 (down)
  ready 2:
    role follower lead=0
    hard state term=3 vote=1 commit=2
  2->1 vote-resp term=3 grant
  3->1 vote-resp term=3 reject
  4->1 vote-resp term=3 reject
> campaign 1
> process-ready 1
  ready 1:
    hard state term=4 vote=1 commit=2
> deliver
  1->2 vote term=4 last=2/3
  1->3 vote term=4 last=2/3
  1->4 vote term=4 last=2/3
  1->5 vote term=4 last=2/3 (down)
> process-ready 2 3 4
  ready 2:
    hard state term=4 vote=1 commit=2
  ready 3:
    hard state term=4 vote=1 commit=2
  ready 4:
    hard state term=4 vote=1 commit=2
> deliver 1
  2->1 vote-resp term=4 grant
  3->1 vote-resp term=4 grant
  4->1 vote-resp term=4 grant
> process-ready 1
  ready 1:
    role leader lead=1
    persist [4/4 empty]
> drop 1->4
  dropped 1 message(s)
> deliver 2 3
  1->2 app term=4 prev=2/3 commit=2 entries=[4/4 empty]
  1->3 app term=4 prev=2/3 commit=2 entries=[4/4 empty]
> process-ready 2 3
  ready 2:
    role follower lead=1
    persist [4/4 empty]
  ready 3:
    role follower lead=1
> deliver 1
  2->1 app-resp term=4 index=4
  3->1 app-resp term=4 reject index=3 hint=2/2
> process-ready 1
> deliver 3
  1->3 app term=4 prev=2/2 commit=2 entries=[2/3 "a"]
> process-ready 3
  ready 3:
    persist [2/3 "a"]
> deliver 1
  3->1 app-resp term=4 index=3
> process-ready 1
> drop 1->3
  dropped 1 message(s)
> drop 1->2
  dropped 0 message(s)
> # Node 1 knows that 2/3 is on nodes 1, 2 and 3, yet its commit index stays at 2: only an
> # entry of its own term may be committed by counting.
> status
  1: leader term=4 lead=1 commit=2 applied=2 log=1..4 voters=(1 2 3 4 5) progress={1: match=4 next=5 replicate, 2: match=4 next=5 replicate, 3: match=3 next=5 replicate, 4: match=0 next=4 probe, 5: match=0 next=4 probe}
  2: follower term=4 lead=1 commit=2 applied=2 log=1..4 voters=(1 2 3 4 5)
  3: follower term=4 lead=1 commit=2 applied=2 log=1..3 voters=(1 2 3 4 5)
  4: follower term=4 lead=0 commit=2 applied=2 log=1..2 voters=(1 2 3 4 5)
  5: down (disk term=3 commit=2 last=4)
> # (d) Node 1 crashes; node 5 comes back and wins term 5 with 3 and 4 (its last entry 3/4 is
> # newer than theirs) and overwrites 2/3 everywhere. Had 2/3 been committed, it would be lost.
> crash 1
> restart 5
  restarted 5: term=3 vote=5 commit=2 last=4
> campaign 5
> stabilize
  ready 5:
    role candidate lead=0
    hard state term=4 vote=5 commit=2
    apply 1/1 bootstrap(1 2 3 4 5), 2/2 empty
  5->1 vote term=4 last=3/4 (down)
  5->2 vote term=4 last=3/4
  5->3 vote term=4 last=3/4
  5->4 vote term=4 last=3/4
  2->5 vote-resp term=4 reject
  3->5 vote-resp term=4 reject
  4->5 vote-resp term=4 reject
  ready 5:
    role follower lead=0
> campaign 5
> stabilize
  ready 5:
    role candidate lead=0
    hard state term=5 vote=5 commit=2
  5->1 vote term=5 last=3/4 (down)
  5->2 vote term=5 last=3/4
  5->3 vote term=5 last=3/4
  5->4 vote term=5 last=3/4
  ready 2:
    role follower lead=0
    hard state term=5 vote=0 commit=2
  ready 3:
    role follower lead=0
    hard state term=5 vote=5 commit=2
  ready 4:
    hard state term=5 vote=5 commit=2
  2->5 vote-resp term=5 reject
  3->5 vote-resp term=5 grant
  4->5 vote-resp term=5 grant
  ready 5:
    role leader lead=5
    persist [5/5 empty]
  5->1 app term=5 prev=3/4 commit=2 entries=[5/5 empty] (down)
  5->2 app term=5 prev=3/4 commit=2 entries=[5/5 empty]
  5->3 app term=5 prev=3/4 commit=2 entries=[5/5 empty]
  5->4 app term=5 prev=3/4 commit=2 entries=[5/5 empty]
  ready 2:
    role follower lead=5
  ready 3:
    role follower lead=5
  ready 4:
    role follower lead=5
  2->5 app-resp term=5 reject index=4 hint=2/3
  3->5 app-resp term=5 reject index=4 hint=2/3
  4->5 app-resp term=5 reject index=4 hint=2/2
  5->2 app term=5 prev=2/2 commit=2 entries=[3/3 empty]
  5->3 app term=5 prev=2/2 commit=2 entries=[3/3 empty]
  5->4 app term=5 prev=2/2 commit=2 entries=[3/3 empty]
  ready 2:
    persist [3/3 empty]
  ready 3:
    persist [3/3 empty]
  ready 4:
    persist [3/3 empty]
  2->5 app-resp term=5 index=3
  3->5 app-resp term=5 index=3
  4->5 app-resp term=5 index=3
  5->2 app term=5 prev=3/3 commit=2 entries=[3/4 "b"]
  5->2 app term=5 prev=3/4 commit=2 entries=[5/5 empty]
  5->3 app term=5 prev=3/3 commit=2 entries=[3/4 "b"]
  5->3 app term=5 prev=3/4 commit=2 entries=[5/5 empty]
  5->4 app term=5 prev=3/3 commit=2 entries=[3/4 "b"]
  5->4 app term=5 prev=3/4 commit=2 entries=[5/5 empty]
  ready 2:
    persist [3/4 "b", 5/5 empty]
  ready 3:
    persist [3/4 "b", 5/5 empty]
  ready 4:
    persist [3/4 "b", 5/5 empty]
  2->5 app-resp term=5 index=4
  2->5 app-resp term=5 index=5
  3->5 app-resp term=5 index=4
  3->5 app-resp term=5 index=5
  4->5 app-resp term=5 index=4
  4->5 app-resp term=5 index=5
  ready 5:
    hard state term=5 vote=5 commit=5
    apply 3/3 empty, 3/4 "b", 5/5 empty
  5->2 app term=5 prev=5/5 commit=5 entries=[]
  5->3 app term=5 prev=5/5 commit=5 entries=[]
  5->4 app term=5 prev=5/5 commit=5 entries=[]
  ready 2:
    hard state term=5 vote=0 commit=5
    apply 3/3 empty, 3/4 "b", 5/5 empty
  ready 3:
    hard state term=5 vote=5 commit=5
    apply 3/3 empty, 3/4 "b", 5/5 empty
  ready 4:
    hard state term=5 vote=5 commit=5
    apply 3/3 empty, 3/4 "b", 5/5 empty
  2->5 app-resp term=5 index=5
  3->5 app-resp term=5 index=5
  4->5 app-resp term=5 index=5
> status
  1: down (disk term=4 commit=2 last=4)
  2: follower term=5 lead=5 commit=5 applied=5 log=1..5 voters=(1 2 3 4 5)
  3: follower term=5 lead=5 commit=5 applied=5 log=1..5 voters=(1 2 3 4 5)
  4: follower term=5 lead=5 commit=5 applied=5 log=1..5 voters=(1 2 3 4 5)
  5: leader term=5 lead=5 commit=5 applied=5 log=1..5 voters=(1 2 3 4 5) progress={1: match=0 next=5 probe, 2: match=5 next=6 replicate, 3: match=5 next=6 replicate, 4: match=5 next=6 replicate, 5: match=5 next=6 replicate}
> log 2
  2: snapshot=none [1/1 bootstrap(1 2 3 4 5), 2/2 empty, 3/3 empty, 3/4 "b", 5/5 empty]
> log 3
  3: snapshot=none [1/1 bootstrap(1 2 3 4 5), 2/2 empty, 3/3 empty, 3/4 "b", 5/5 empty]

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > log-conflict.txt > trace 1`] = `
> # Log conflict repair with fast back-off: node 3 led term 3 alone and wrote a long tail that
> # was never committed. The new leader finds the divergence in one round trip per term (the
> # follower's hint names its last entry of an older term) and overwrites the tail.
> add-nodes 3 preVote=false checkQuorum=false
  nodes 1 2 3: voters=(1 2 3)
> campaign 3
> stabilize
  ready 1:
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    role candidate lead=0
    hard state term=2 vote=3 commit=1
    apply 1/1 bootstrap(1 2 3)
  3->1 vote term=2 last=1/1
  3->2 vote term=2 last=1/1
  ready 1:
    hard state term=2 vote=3 commit=1
  ready 2:
    hard state term=2 vote=3 commit=1
  1->3 vote-resp term=2 grant
  2->3 vote-resp term=2 grant
  ready 3:
    role leader lead=3
    persist [2/2 empty]
  3->1 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  3->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 1:
    role follower lead=3
    persist [2/2 empty]
  ready 2:
    role follower lead=3
    persist [2/2 empty]
  1->3 app-resp term=2 index=2
  2->3 app-resp term=2 index=2
  ready 3:
    hard state term=2 vote=3 commit=2
    apply 2/2 empty
  3->1 app term=2 prev=2/2 commit=2 entries=[]
  3->2 app term=2 prev=2/2 commit=2 entries=[]
  ready 1:
    hard state term=2 vote=3 commit=2
    apply 2/2 empty
  ready 2:
    hard state term=2 vote=3 commit=2
    apply 2/2 empty
  1->3 app-resp term=2 index=2
  2->3 app-resp term=2 index=2
> partition 3 | 1 2
> propose 3 x1
  accepted 2/3
> propose 3 x2
  accepted 2/4
> propose 3 x3
  accepted 2/5
> propose 3 x4
  accepted 2/6
> stabilize
  ready 3:
    persist [2/3 "x1", 2/4 "x2", 2/5 "x3", 2/6 "x4"]
  3->1 app term=2 prev=2/2 commit=2 entries=[2/3 "x1", 2/4 "x2", 2/5 "x3", 2/6 "x4"] (cut)
  3->2 app term=2 prev=2/2 commit=2 entries=[2/3 "x1", 2/4 "x2", 2/5 "x3", 2/6 "x4"] (cut)
> campaign 1
> stabilize
  ready 1:
    role candidate lead=0
    hard state term=3 vote=1 commit=2
  1->2 vote term=3 last=2/2
  1->3 vote term=3 last=2/2 (cut)
  ready 2:
    role follower lead=0
    hard state term=3 vote=1 commit=2
  2->1 vote-resp term=3 grant
  ready 1:
    role leader lead=1
    persist [3/3 empty]
  1->2 app term=3 prev=2/2 commit=2 entries=[3/3 empty]
  1->3 app term=3 prev=2/2 commit=2 entries=[3/3 empty] (cut)
  ready 2:
    role follower lead=1
    persist [3/3 empty]
  2->1 app-resp term=3 index=3
  ready 1:
    hard state term=3 vote=1 commit=3
    apply 3/3 empty
  1->2 app term=3 prev=3/3 commit=3 entries=[]
  ready 2:
    hard state term=3 vote=1 commit=3
    apply 3/3 empty
  2->1 app-resp term=3 index=3
> propose 1 y1
  accepted 3/4
> propose 1 y2
  accepted 3/5
> propose 1 y3
  accepted 3/6
> stabilize
  ready 1:
    persist [3/4 "y1", 3/5 "y2", 3/6 "y3"]
  1->2 app term=3 prev=3/3 commit=3 entries=[3/4 "y1", 3/5 "y2", 3/6 "y3"]
  ready 2:
    persist [3/4 "y1", 3/5 "y2", 3/6 "y3"]
  2->1 app-resp term=3 index=6
  ready 1:
    hard state term=3 vote=1 commit=6
    apply 3/4 "y1", 3/5 "y2", 3/6 "y3"
  1->2 app term=3 prev=3/6 commit=6 entries=[]
  ready 2:
    hard state term=3 vote=1 commit=6
    apply 3/4 "y1", 3/5 "y2", 3/6 "y3"
  2->1 app-resp term=3 index=6
> # Node 2 takes over in term 4 (its log equals node 1's), so its first probe to node 3 starts
> # at its own last index, far beyond the point of divergence.
> campaign 2
> stabilize
  ready 2:
    role candidate lead=0
    hard state term=4 vote=2 commit=6
  2->1 vote term=4 last=3/6
  2->3 vote term=4 last=3/6 (cut)
  ready 1:
    role follower lead=0
    hard state term=4 vote=2 commit=6
  1->2 vote-resp term=4 grant
  ready 2:
    role leader lead=2
    persist [4/7 empty]
  2->1 app term=4 prev=3/6 commit=6 entries=[4/7 empty]
  2->3 app term=4 prev=3/6 commit=6 entries=[4/7 empty] (cut)
  ready 1:
    role follower lead=2
    persist [4/7 empty]
  1->2 app-resp term=4 index=7
  ready 2:
    hard state term=4 vote=2 commit=7
    apply 4/7 empty
  2->1 app term=4 prev=4/7 commit=7 entries=[]
  ready 1:
    hard state term=4 vote=2 commit=7
    apply 4/7 empty
  1->2 app-resp term=4 index=7
> log 3
  3: snapshot=none [1/1 bootstrap(1 2 3), 2/2 empty, 2/3 "x1", 2/4 "x2", 2/5 "x3", 2/6 "x4"]
> heal
> # Node 3 rejects the probe with the hint 2/6 (its last entry of term 2 or earlier); the
> # leader skips its own term-3 entries at once and overwrites node 3's tail.
> tick 2 1
> stabilize
  2->1 heartbeat term=4 commit=7
  2->3 heartbeat term=4 commit=0
  ready 3:
    role follower lead=2
    hard state term=4 vote=0 commit=2
  1->2 heartbeat-resp term=4
  3->2 heartbeat-resp term=4
  2->3 app term=4 prev=3/6 commit=7 entries=[4/7 empty]
  3->2 app-resp term=4 reject index=6 hint=2/6
  2->3 app term=4 prev=2/2 commit=7 entries=[3/3 empty, 3/4 "y1", 3/5 "y2", 3/6 "y3", 4/7 empty]
  ready 3:
    hard state term=4 vote=0 commit=7
    persist [3/3 empty, 3/4 "y1", 3/5 "y2", 3/6 "y3", 4/7 empty]
    apply 3/3 empty, 3/4 "y1", 3/5 "y2", 3/6 "y3", 4/7 empty
  3->2 app-resp term=4 index=7
> log 2
  2: snapshot=none [1/1 bootstrap(1 2 3), 2/2 empty, 3/3 empty, 3/4 "y1", 3/5 "y2", 3/6 "y3", 4/7 empty]
> log 3
  3: snapshot=none [1/1 bootstrap(1 2 3), 2/2 empty, 3/3 empty, 3/4 "y1", 3/5 "y2", 3/6 "y3", 4/7 empty]
> status
  1: follower term=4 lead=2 commit=7 applied=7 log=1..7 voters=(1 2 3)
  2: leader term=4 lead=2 commit=7 applied=7 log=1..7 voters=(1 2 3) progress={1: match=7 next=8 replicate, 2: match=7 next=8 replicate, 3: match=7 next=8 replicate}
  3: follower term=4 lead=2 commit=7 applied=7 log=1..7 voters=(1 2 3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > membership.txt > trace 1`] = `
> # Membership: add a voter, add a learner and promote it, remove a voter. One change at a time:
> # a second proposal while one is pending is dropped. Removed ids are never reused, and a
> # removed node no longer campaigns.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> add-voter 4
  via 1: accepted 2/3
> add-learner 5
  via 1: dropped: conf-change-pending
> stabilize
  ready 1:
    persist [2/3 add-voter(4)]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 add-voter(4)]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 add-voter(4)]
  ready 2:
    persist [2/3 add-voter(4)]
  ready 3:
    persist [2/3 add-voter(4)]
  2->1 app-resp term=2 index=3
  3->1 app-resp term=2 index=3
  ready 1:
    hard state term=2 vote=1 commit=3
    apply 2/3 add-voter(4)
  1->2 app term=2 prev=2/3 commit=3 entries=[]
  1->3 app term=2 prev=2/3 commit=3 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=3
    apply 2/3 add-voter(4)
  ready 3:
    hard state term=2 vote=1 commit=3
    apply 2/3 add-voter(4)
  1->4 app term=2 prev=2/3 commit=3 entries=[]
  2->1 app-resp term=2 index=3
  3->1 app-resp term=2 index=3
  ready 4:
    role follower lead=1
    hard state term=2 vote=0 commit=0
  4->1 app-resp term=2 reject index=3 hint=0/0
  1->4 app term=2 prev=0/0 commit=3 entries=[1/1 bootstrap(1 2 3), 2/2 empty, 2/3 add-voter(4)]
  ready 4:
    hard state term=2 vote=0 commit=3
    persist [1/1 bootstrap(1 2 3), 2/2 empty, 2/3 add-voter(4)]
    apply 1/1 bootstrap(1 2 3), 2/2 empty, 2/3 add-voter(4)
  4->1 app-resp term=2 index=3
> status
  1: leader term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3 4) progress={1: match=3 next=4 replicate, 2: match=3 next=4 replicate, 3: match=3 next=4 replicate, 4: match=3 next=4 replicate}
  2: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3 4)
  3: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3 4)
  4: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3 4)
  5: follower term=0 lead=0 commit=0 applied=0 log=1..0 voters=()
> add-learner 5
  via 1: accepted 2/4
> stabilize
  ready 1:
    persist [2/4 add-learner(5)]
  1->2 app term=2 prev=2/3 commit=3 entries=[2/4 add-learner(5)]
  1->3 app term=2 prev=2/3 commit=3 entries=[2/4 add-learner(5)]
  1->4 app term=2 prev=2/3 commit=3 entries=[2/4 add-learner(5)]
  ready 2:
    persist [2/4 add-learner(5)]
  ready 3:
    persist [2/4 add-learner(5)]
  ready 4:
    persist [2/4 add-learner(5)]
  2->1 app-resp term=2 index=4
  3->1 app-resp term=2 index=4
  4->1 app-resp term=2 index=4
  ready 1:
    hard state term=2 vote=1 commit=4
    apply 2/4 add-learner(5)
  1->2 app term=2 prev=2/4 commit=4 entries=[]
  1->3 app term=2 prev=2/4 commit=4 entries=[]
  1->4 app term=2 prev=2/4 commit=4 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=4
    apply 2/4 add-learner(5)
  ready 3:
    hard state term=2 vote=1 commit=4
    apply 2/4 add-learner(5)
  ready 4:
    hard state term=2 vote=0 commit=4
    apply 2/4 add-learner(5)
  1->5 app term=2 prev=2/4 commit=4 entries=[]
  2->1 app-resp term=2 index=4
  3->1 app-resp term=2 index=4
  4->1 app-resp term=2 index=4
  ready 5:
    role follower lead=1
    hard state term=2 vote=0 commit=0
  5->1 app-resp term=2 reject index=4 hint=0/0
  1->5 app term=2 prev=0/0 commit=4 entries=[1/1 bootstrap(1 2 3), 2/2 empty, 2/3 add-voter(4), 2/4 add-learner(5)]
  ready 5:
    hard state term=2 vote=0 commit=4
    persist [1/1 bootstrap(1 2 3), 2/2 empty, 2/3 add-voter(4), 2/4 add-learner(5)]
    apply 1/1 bootstrap(1 2 3), 2/2 empty, 2/3 add-voter(4), 2/4 add-learner(5)
  5->1 app-resp term=2 index=4
> propose 1 x
  accepted 2/5
> stabilize
  ready 1:
    persist [2/5 "x"]
  1->2 app term=2 prev=2/4 commit=4 entries=[2/5 "x"]
  1->3 app term=2 prev=2/4 commit=4 entries=[2/5 "x"]
  1->4 app term=2 prev=2/4 commit=4 entries=[2/5 "x"]
  1->5 app term=2 prev=2/4 commit=4 entries=[2/5 "x"]
  ready 2:
    persist [2/5 "x"]
  ready 3:
    persist [2/5 "x"]
  ready 4:
    persist [2/5 "x"]
  ready 5:
    persist [2/5 "x"]
  2->1 app-resp term=2 index=5
  3->1 app-resp term=2 index=5
  4->1 app-resp term=2 index=5
  5->1 app-resp term=2 index=5
  ready 1:
    hard state term=2 vote=1 commit=5
    apply 2/5 "x"
  1->2 app term=2 prev=2/5 commit=5 entries=[]
  1->3 app term=2 prev=2/5 commit=5 entries=[]
  1->4 app term=2 prev=2/5 commit=5 entries=[]
  1->5 app term=2 prev=2/5 commit=5 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=5
    apply 2/5 "x"
  ready 3:
    hard state term=2 vote=1 commit=5
    apply 2/5 "x"
  ready 4:
    hard state term=2 vote=0 commit=5
    apply 2/5 "x"
  ready 5:
    hard state term=2 vote=0 commit=5
    apply 2/5 "x"
  2->1 app-resp term=2 index=5
  3->1 app-resp term=2 index=5
  4->1 app-resp term=2 index=5
  5->1 app-resp term=2 index=5
> status
  1: leader term=2 lead=1 commit=5 applied=5 log=1..5 voters=(1 2 3 4) learners=(5) progress={1: match=5 next=6 replicate, 2: match=5 next=6 replicate, 3: match=5 next=6 replicate, 4: match=5 next=6 replicate, 5: match=5 next=6 replicate learner}
  2: follower term=2 lead=1 commit=5 applied=5 log=1..5 voters=(1 2 3 4) learners=(5)
  3: follower term=2 lead=1 commit=5 applied=5 log=1..5 voters=(1 2 3 4) learners=(5)
  4: follower term=2 lead=1 commit=5 applied=5 log=1..5 voters=(1 2 3 4) learners=(5)
  5: follower term=2 lead=1 commit=5 applied=5 log=1..5 voters=(1 2 3 4) learners=(5)
> promote 5
  via 1: accepted 2/6
> stabilize
  ready 1:
    persist [2/6 promote-learner(5)]
  1->2 app term=2 prev=2/5 commit=5 entries=[2/6 promote-learner(5)]
  1->3 app term=2 prev=2/5 commit=5 entries=[2/6 promote-learner(5)]
  1->4 app term=2 prev=2/5 commit=5 entries=[2/6 promote-learner(5)]
  1->5 app term=2 prev=2/5 commit=5 entries=[2/6 promote-learner(5)]
  ready 2:
    persist [2/6 promote-learner(5)]
  ready 3:
    persist [2/6 promote-learner(5)]
  ready 4:
    persist [2/6 promote-learner(5)]
  ready 5:
    persist [2/6 promote-learner(5)]
  2->1 app-resp term=2 index=6
  3->1 app-resp term=2 index=6
  4->1 app-resp term=2 index=6
  5->1 app-resp term=2 index=6
  ready 1:
    hard state term=2 vote=1 commit=6
    apply 2/6 promote-learner(5)
  1->2 app term=2 prev=2/6 commit=6 entries=[]
  1->3 app term=2 prev=2/6 commit=6 entries=[]
  1->4 app term=2 prev=2/6 commit=6 entries=[]
  1->5 app term=2 prev=2/6 commit=6 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=6
    apply 2/6 promote-learner(5)
  ready 3:
    hard state term=2 vote=1 commit=6
    apply 2/6 promote-learner(5)
  ready 4:
    hard state term=2 vote=0 commit=6
    apply 2/6 promote-learner(5)
  ready 5:
    hard state term=2 vote=0 commit=6
    apply 2/6 promote-learner(5)
  2->1 app-resp term=2 index=6
  3->1 app-resp term=2 index=6
  4->1 app-resp term=2 index=6
  5->1 app-resp term=2 index=6
> remove 3
  via 1: accepted 2/7
> stabilize
  ready 1:
    persist [2/7 remove(3)]
  1->2 app term=2 prev=2/6 commit=6 entries=[2/7 remove(3)]
  1->3 app term=2 prev=2/6 commit=6 entries=[2/7 remove(3)]
  1->4 app term=2 prev=2/6 commit=6 entries=[2/7 remove(3)]
  1->5 app term=2 prev=2/6 commit=6 entries=[2/7 remove(3)]
  ready 2:
    persist [2/7 remove(3)]
  ready 3:
    persist [2/7 remove(3)]
  ready 4:
    persist [2/7 remove(3)]
  ready 5:
    persist [2/7 remove(3)]
  2->1 app-resp term=2 index=7
  3->1 app-resp term=2 index=7
  4->1 app-resp term=2 index=7
  5->1 app-resp term=2 index=7
  ready 1:
    hard state term=2 vote=1 commit=7
    apply 2/7 remove(3)
  1->2 app term=2 prev=2/7 commit=7 entries=[]
  1->3 app term=2 prev=2/7 commit=7 entries=[]
  1->4 app term=2 prev=2/7 commit=7 entries=[]
  1->5 app term=2 prev=2/7 commit=7 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=7
    apply 2/7 remove(3)
  ready 3:
    hard state term=2 vote=1 commit=7
    apply 2/7 remove(3)
  ready 4:
    hard state term=2 vote=0 commit=7
    apply 2/7 remove(3)
  ready 5:
    hard state term=2 vote=0 commit=7
    apply 2/7 remove(3)
  2->1 app-resp term=2 index=7
  3->1 app-resp term=2 index=7
  4->1 app-resp term=2 index=7
  5->1 app-resp term=2 index=7
> status
  1: leader term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3) progress={1: match=7 next=8 replicate, 2: match=7 next=8 replicate, 4: match=7 next=8 replicate, 5: match=7 next=8 replicate}
  2: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
  3: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
  4: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
  5: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
> add-voter 3
  via 1: dropped: invalid-conf-change (node 3 was removed; ids are never reused)
> tick 3 40
> stabilize
> status
  1: leader term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3) progress={1: match=7 next=8 replicate, 2: match=7 next=8 replicate, 4: match=7 next=8 replicate, 5: match=7 next=8 replicate}
  2: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
  3: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
  4: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)
  5: follower term=2 lead=1 commit=7 applied=7 log=1..7 voters=(1 2 4 5) removed=(3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > prevote.txt > trace 1`] = `
> # Pre-vote stops a rejoining node from disrupting a healthy cluster: while cut off, node 3
> # keeps failing its pre-votes without raising its term, and when it returns the leader keeps
> # its term and leadership.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> partition 3 | 1 2
> tick 3 40
> stabilize
  ready 3:
    role pre-candidate lead=0
  3->1 pre-vote term=3 last=2/2 (cut)
  3->2 pre-vote term=3 last=2/2 (cut)
  3->1 pre-vote term=3 last=2/2 (cut)
  3->2 pre-vote term=3 last=2/2 (cut)
> propose 1 while-3-was-away
  accepted 2/3
> stabilize
  ready 1:
    persist [2/3 "while-3-was-away"]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "while-3-was-away"]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "while-3-was-away"] (cut)
  ready 2:
    persist [2/3 "while-3-was-away"]
  2->1 app-resp term=2 index=3
  ready 1:
    hard state term=2 vote=1 commit=3
    apply 2/3 "while-3-was-away"
  1->2 app term=2 prev=2/3 commit=3 entries=[]
  1->3 app term=2 prev=2/3 commit=3 entries=[] (cut)
  ready 2:
    hard state term=2 vote=1 commit=3
    apply 2/3 "while-3-was-away"
  2->1 app-resp term=2 index=3
> status
  1: leader term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3) progress={1: match=3 next=4 replicate, 2: match=3 next=4 replicate, 3: match=2 next=4 replicate}
  2: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)
  3: pre-candidate term=2 lead=0 commit=2 applied=2 log=1..2 voters=(1 2 3)
> heal
> tick 3 20
> stabilize
  3->1 pre-vote term=3 last=2/2
  3->2 pre-vote term=3 last=2/2
> # The leader's heartbeat brings node 3 back, still in term 2.
> tick 1 1
> stabilize
  1->2 heartbeat term=2 commit=3
  1->3 heartbeat term=2 commit=2
  ready 3:
    role follower lead=1
  2->1 heartbeat-resp term=2
  3->1 heartbeat-resp term=2
  1->3 app term=2 prev=2/3 commit=3 entries=[]
  3->1 app-resp term=2 reject index=3 hint=2/2
  1->3 app term=2 prev=2/2 commit=3 entries=[2/3 "while-3-was-away"]
  ready 3:
    hard state term=2 vote=1 commit=3
    persist [2/3 "while-3-was-away"]
    apply 2/3 "while-3-was-away"
  3->1 app-resp term=2 index=3
> status
  1: leader term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3) progress={1: match=3 next=4 replicate, 2: match=3 next=4 replicate, 3: match=3 next=4 replicate}
  2: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)
  3: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > read-index.txt > trace 1`] = `
> # ReadIndex: the leader records its commit index, confirms it is still leader with a
> # heartbeat round, and only then releases the read. A follower forwards to the leader.
> # A leader cut off from the majority cannot confirm and serves nothing.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> propose 1 x
  accepted 2/3
> stabilize
  ready 1:
    persist [2/3 "x"]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "x"]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "x"]
  ready 2:
    persist [2/3 "x"]
  ready 3:
    persist [2/3 "x"]
  2->1 app-resp term=2 index=3
  3->1 app-resp term=2 index=3
  ready 1:
    hard state term=2 vote=1 commit=3
    apply 2/3 "x"
  1->2 app term=2 prev=2/3 commit=3 entries=[]
  1->3 app term=2 prev=2/3 commit=3 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=3
    apply 2/3 "x"
  ready 3:
    hard state term=2 vote=1 commit=3
    apply 2/3 "x"
  2->1 app-resp term=2 index=3
  3->1 app-resp term=2 index=3
> read-index 1 r1
  accepted
> stabilize
  1->2 heartbeat term=2 commit=3 read=1
  1->3 heartbeat term=2 commit=3 read=1
  2->1 heartbeat-resp term=2 read=1
  3->1 heartbeat-resp term=2 read=1
  ready 1:
    read-state index=3 ctx=r1
> read-index 2 r2
  accepted
> stabilize
  2->1 read-index term=2 ctx=r2
  1->2 heartbeat term=2 commit=3 read=2
  1->3 heartbeat term=2 commit=3 read=2
  2->1 heartbeat-resp term=2 read=2
  3->1 heartbeat-resp term=2 read=2
  1->2 read-index-resp term=2 index=3 ctx=r2
  ready 2:
    read-state index=3 ctx=r2
> partition 1 | 2 3
> read-index 1 r3
  accepted
> stabilize
  1->2 heartbeat term=2 commit=3 read=3 (cut)
  1->3 heartbeat term=2 commit=3 read=3 (cut)
> status
  1: leader term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3) progress={1: match=3 next=4 replicate, 2: match=3 next=4 replicate, 3: match=3 next=4 replicate}
  2: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)
  3: follower term=2 lead=1 commit=3 applied=3 log=1..3 voters=(1 2 3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > snapshot.txt > trace 1`] = `
> # A follower that falls behind the leader's compacted log receives a snapshot, installs it,
> # and catches up with the entries after it.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> crash 3
> propose 1 a
  accepted 2/3
> propose 1 b
  accepted 2/4
> propose 1 c
  accepted 2/5
> stabilize
  ready 1:
    persist [2/3 "a", 2/4 "b", 2/5 "c"]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "a", 2/4 "b", 2/5 "c"]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "a", 2/4 "b", 2/5 "c"] (down)
  ready 2:
    persist [2/3 "a", 2/4 "b", 2/5 "c"]
  2->1 app-resp term=2 index=5
  ready 1:
    hard state term=2 vote=1 commit=5
    apply 2/3 "a", 2/4 "b", 2/5 "c"
  1->2 app term=2 prev=2/5 commit=5 entries=[]
  1->3 app term=2 prev=2/5 commit=5 entries=[] (down)
  ready 2:
    hard state term=2 vote=1 commit=5
    apply 2/3 "a", 2/4 "b", 2/5 "c"
  2->1 app-resp term=2 index=5
> compact 1 4
  compacted 1 to 2/4
> compact 2 4
  compacted 2 to 2/4
> propose 1 d
  accepted 2/6
> stabilize
  ready 1:
    persist [2/6 "d"]
  1->2 app term=2 prev=2/5 commit=5 entries=[2/6 "d"]
  1->3 app term=2 prev=2/5 commit=5 entries=[2/6 "d"] (down)
  ready 2:
    persist [2/6 "d"]
  2->1 app-resp term=2 index=6
  ready 1:
    hard state term=2 vote=1 commit=6
    apply 2/6 "d"
  1->2 app term=2 prev=2/6 commit=6 entries=[]
  1->3 app term=2 prev=2/6 commit=6 entries=[] (down)
  ready 2:
    hard state term=2 vote=1 commit=6
    apply 2/6 "d"
  2->1 app-resp term=2 index=6
> log 1
  1: snapshot=2/4 [2/5 "c", 2/6 "d"]
> restart 3
  restarted 3: term=2 vote=1 commit=2 last=2
> tick 1 1
> stabilize
  ready 3:
    apply 1/1 bootstrap(1 2 3), 2/2 empty
  1->2 heartbeat term=2 commit=6
  1->3 heartbeat term=2 commit=2
  ready 3:
    role follower lead=1
  2->1 heartbeat-resp term=2
  3->1 heartbeat-resp term=2
  1->3 app term=2 prev=2/6 commit=6 entries=[]
  3->1 app-resp term=2 reject index=6 hint=2/2
  1->3 snap term=2 snap=2/4 voters=(1 2 3)
  ready 3:
    hard state term=2 vote=1 commit=4
    snapshot 2/4 voters=(1 2 3)
  3->1 app-resp term=2 index=4
  1->3 app term=2 prev=2/4 commit=6 entries=[2/5 "c", 2/6 "d"]
  ready 3:
    hard state term=2 vote=1 commit=6
    persist [2/5 "c", 2/6 "d"]
    apply 2/5 "c", 2/6 "d"
  3->1 app-resp term=2 index=6
> log 3
  3: snapshot=2/4 [2/5 "c", 2/6 "d"]
> status
  1: leader term=2 lead=1 commit=6 applied=6 log=5..6 voters=(1 2 3) progress={1: match=6 next=7 replicate, 2: match=6 next=7 replicate, 3: match=6 next=7 replicate}
  2: follower term=2 lead=1 commit=6 applied=6 log=5..6 voters=(1 2 3)
  3: follower term=2 lead=1 commit=6 applied=6 log=5..6 voters=(1 2 3)

`

exports[`dist/tests/cluster/scenarios.test.js > TAP > transfer.txt > trace 1`] = `
> # Leadership transfer: the target is caught up first, then told to campaign at once
> # (TimeoutNow), skipping pre-vote and the others' leader lease. Proposals are dropped while a
> # transfer is pending, and a transfer that cannot finish is abandoned after a timeout.
> add-nodes 3
  nodes 1 2 3: voters=(1 2 3)
> campaign 1
> stabilize
  ready 1:
    role pre-candidate lead=0
    apply 1/1 bootstrap(1 2 3)
  ready 2:
    apply 1/1 bootstrap(1 2 3)
  ready 3:
    apply 1/1 bootstrap(1 2 3)
  1->2 pre-vote term=2 last=1/1
  1->3 pre-vote term=2 last=1/1
  2->1 pre-vote-resp term=2 grant
  3->1 pre-vote-resp term=2 grant
  ready 1:
    role candidate lead=0
    hard state term=2 vote=1 commit=1
  1->2 vote term=2 last=1/1
  1->3 vote term=2 last=1/1
  ready 2:
    hard state term=2 vote=1 commit=1
  ready 3:
    hard state term=2 vote=1 commit=1
  2->1 vote-resp term=2 grant
  3->1 vote-resp term=2 grant
  ready 1:
    role leader lead=1
    persist [2/2 empty]
  1->2 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  1->3 app term=2 prev=1/1 commit=1 entries=[2/2 empty]
  ready 2:
    role follower lead=1
    persist [2/2 empty]
  ready 3:
    role follower lead=1
    persist [2/2 empty]
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
  ready 1:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  1->2 app term=2 prev=2/2 commit=2 entries=[]
  1->3 app term=2 prev=2/2 commit=2 entries=[]
  ready 2:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  ready 3:
    hard state term=2 vote=1 commit=2
    apply 2/2 empty
  2->1 app-resp term=2 index=2
  3->1 app-resp term=2 index=2
> crash 3
> propose 1 a
  accepted 2/3
> stabilize
  ready 1:
    persist [2/3 "a"]
  1->2 app term=2 prev=2/2 commit=2 entries=[2/3 "a"]
  1->3 app term=2 prev=2/2 commit=2 entries=[2/3 "a"] (down)
  ready 2:
    persist [2/3 "a"]
  2->1 app-resp term=2 index=3
  ready 1:
    hard state term=2 vote=1 commit=3
    apply 2/3 "a"
  1->2 app term=2 prev=2/3 commit=3 entries=[]
  1->3 app term=2 prev=2/3 commit=3 entries=[] (down)
  ready 2:
    hard state term=2 vote=1 commit=3
    apply 2/3 "a"
  2->1 app-resp term=2 index=3
> restart 3
  restarted 3: term=2 vote=1 commit=2 last=2
> transfer-leader 1 3
  started
> propose 1 dropped-during-transfer
  dropped: transferring
> stabilize
  ready 3:
    apply 1/1 bootstrap(1 2 3), 2/2 empty
  1->3 app term=2 prev=2/3 commit=3 entries=[]
  ready 3:
    role follower lead=1
  3->1 app-resp term=2 reject index=3 hint=2/2
  1->3 app term=2 prev=2/2 commit=3 entries=[2/3 "a"]
  ready 3:
    hard state term=2 vote=1 commit=3
    persist [2/3 "a"]
    apply 2/3 "a"
  3->1 app-resp term=2 index=3
  1->3 timeout-now term=2
  ready 3:
    role candidate lead=0
    hard state term=3 vote=3 commit=3
  3->1 vote term=3 last=2/3 transfer
  3->2 vote term=3 last=2/3 transfer
  ready 1:
    role follower lead=0
    hard state term=3 vote=3 commit=3
  ready 2:
    role follower lead=0
    hard state term=3 vote=3 commit=3
  1->3 vote-resp term=3 grant
  2->3 vote-resp term=3 grant
  ready 3:
    role leader lead=3
    persist [3/4 empty]
  3->1 app term=3 prev=2/3 commit=3 entries=[3/4 empty]
  3->2 app term=3 prev=2/3 commit=3 entries=[3/4 empty]
  ready 1:
    role follower lead=3
    persist [3/4 empty]
  ready 2:
    role follower lead=3
    persist [3/4 empty]
  1->3 app-resp term=3 index=4
  2->3 app-resp term=3 index=4
  ready 3:
    hard state term=3 vote=3 commit=4
    apply 3/4 empty
  3->1 app term=3 prev=3/4 commit=4 entries=[]
  3->2 app term=3 prev=3/4 commit=4 entries=[]
  ready 1:
    hard state term=3 vote=3 commit=4
    apply 3/4 empty
  ready 2:
    hard state term=3 vote=3 commit=4
    apply 3/4 empty
  1->3 app-resp term=3 index=4
  2->3 app-resp term=3 index=4
> status
  1: follower term=3 lead=3 commit=4 applied=4 log=1..4 voters=(1 2 3)
  2: follower term=3 lead=3 commit=4 applied=4 log=1..4 voters=(1 2 3)
  3: leader term=3 lead=3 commit=4 applied=4 log=1..4 voters=(1 2 3) progress={1: match=4 next=5 replicate, 2: match=4 next=5 replicate, 3: match=4 next=5 replicate}
> # A transfer to a node that does not answer is abandoned after an election timeout.
> crash 1
> transfer-leader 3 1
  started
> propose 3 b
  dropped: transferring
> tick 3 10
> propose 3 c
  accepted 3/5
> stabilize
  ready 3:
    persist [3/5 "c"]
  3->1 timeout-now term=3 (down)
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 heartbeat term=3 commit=4 (down)
  3->2 heartbeat term=3 commit=4
  3->1 app term=3 prev=3/4 commit=4 entries=[3/5 "c"] (down)
  3->2 app term=3 prev=3/4 commit=4 entries=[3/5 "c"]
  ready 2:
    persist [3/5 "c"]
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 heartbeat-resp term=3
  2->3 app-resp term=3 index=5
  ready 3:
    hard state term=3 vote=3 commit=5
    apply 3/5 "c"
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  3->2 app term=3 prev=3/5 commit=4 entries=[]
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  2->3 app-resp term=3 index=5
  3->1 app term=3 prev=3/5 commit=5 entries=[] (down)
  3->2 app term=3 prev=3/5 commit=5 entries=[]
  ready 2:
    hard state term=3 vote=3 commit=5
    apply 3/5 "c"
  2->3 app-resp term=3 index=5
> status
  1: down (disk term=3 commit=4 last=4)
  2: follower term=3 lead=3 commit=5 applied=5 log=1..5 voters=(1 2 3)
  3: leader term=3 lead=3 commit=5 applied=5 log=1..5 voters=(1 2 3) progress={1: match=4 next=6 replicate, 2: match=5 next=6 replicate, 3: match=5 next=6 replicate}

`
