# The Python OVSDB IDL of Open vSwitch (python3-openvswitch), the library under Neutron's
# ovsdbapp, driven against an OVN_Northbound remote. Prints one JSON object per line.
#
#   python-idl.py script REMOTE   a fixed sequence of IDL transactions and monitor conditions,
#                                  each step's outcome, then the tables' contents by name: the
#                                  same output from any server that behaves as ovsdb-server does
#   python-idl.py loop REMOTE N    N switch inserts, each retried while the IDL says "try again";
#                                  prints one line per insert and a summary
#
# Only the library's public API is used (Idl, Transaction, Row), as ovsdbapp uses it.
import json
import sys
import time

import ovs.db.idl as idl_mod
import ovs.poller

NB_SCHEMA = '/usr/share/ovn/ovn-nb.ovsschema'
SYNC_S = 20


def out(**fields):
    print(json.dumps(fields, sort_keys=True), flush=True)


def new_idl(remote):
    helper = idl_mod.SchemaHelper(location=NB_SCHEMA)
    helper.register_all()
    return idl_mod.Idl(remote, helper, leader_only=True)


def run_until(idls, pred, timeout_s=SYNC_S):
    deadline = time.time() + timeout_s
    while True:
        for idl in idls:
            idl.run()
        if pred():
            return True
        if time.time() > deadline:
            return False
        poller = ovs.poller.Poller()
        for idl in idls:
            idl.wait(poller)
        poller.timer_wait(50)
        poller.block()


def connected(idl):
    return idl.has_ever_connected() and idl.change_seqno > 0


def rows(idl, table):
    return list(idl.tables[table].rows.values())


def find(idl, table, name):
    return next((r for r in rows(idl, table) if r.name == name), None)


def commit(txn):
    status = txn.commit_block()
    error = txn.get_error() if status == idl_mod.Transaction.ERROR else None
    return status, error


def error_name(error):
    # ovsdb-server's error object as the IDL reports it: its "error" member.
    try:
        return json.loads(error).get('error')
    except (TypeError, ValueError):
        return error


def script(remote):
    a, b = new_idl(remote), new_idl(remote)
    if not run_until([a, b], lambda: connected(a) and connected(b)):
        out(step='connect', ok=False)
        return
    out(step='connect', ok=True)

    txn = idl_mod.Transaction(a)
    if not rows(a, 'NB_Global'):
        # The IDL sends no insert for a row with no column set.
        txn.insert(a.tables['NB_Global']).external_ids = {'cms': 'python-idl'}
    sw = txn.insert(a.tables['Logical_Switch'])
    sw.name = 'net0'
    sw.external_ids = {'neutron:network_name': 'net0', 'owner': 'a'}
    ports = []
    for i in range(2):
        p = txn.insert(a.tables['Logical_Switch_Port'])
        p.name = f'net0-p{i}'
        p.addresses = [f'00:00:00:00:00:0{i + 1} 10.0.0.{i + 11}']
        p.port_security = p.addresses
        ports.append(p)
    sw.ports = ports
    status, error = commit(txn)
    out(step='insert a switch with two ports', status=status, error=error, uuid_known=txn.get_insert_uuid(sw.uuid) is not None)
    run_until([a, b], lambda: find(b, 'Logical_Switch', 'net0') is not None and len(rows(b, 'NB_Global')) == 1)

    # Optimistic concurrency: both read net0's ports, both add one; the second finds them changed.
    ta, tb = idl_mod.Transaction(a), idl_mod.Transaction(b)
    ra, rb = find(a, 'Logical_Switch', 'net0'), find(b, 'Logical_Switch', 'net0')
    ra.verify('ports')
    pa = ta.insert(a.tables['Logical_Switch_Port'])
    pa.name = 'net0-pa'
    ra.ports = list(ra.ports) + [pa]
    rb.verify('ports')
    pb = tb.insert(b.tables['Logical_Switch_Port'])
    pb.name = 'net0-pb'
    rb.ports = list(rb.ports) + [pb]
    out(step='verified add, first', status=commit(ta)[0])
    out(step='verified add, second (stale read)', status=commit(tb)[0])
    run_until([a, b], lambda: len(find(b, 'Logical_Switch', 'net0').ports) == 3)
    tb = idl_mod.Transaction(b)
    rb = find(b, 'Logical_Switch', 'net0')
    rb.verify('ports')
    pb = tb.insert(b.tables['Logical_Switch_Port'])
    pb.name = 'net0-pb'
    rb.ports = list(rb.ports) + [pb]
    out(step='verified add, second retried', status=commit(tb)[0])
    run_until([a, b], lambda: len(find(a, 'Logical_Switch', 'net0').ports) == 4)

    # Mutations: addvalue and delvalue on a set, setkey and delkey on a map.
    ta = idl_mod.Transaction(a)
    ra = find(a, 'Logical_Switch', 'net0')
    ra.delvalue('ports', find(a, 'Logical_Switch_Port', 'net0-p0').uuid)
    pc = ta.insert(a.tables['Logical_Switch_Port'])
    pc.name = 'net0-pc'
    ra.addvalue('ports', pc.uuid)
    ra.setkey('external_ids', 'owner', 'b')
    ra.setkey('other_config', 'mcast_snoop', 'true')
    ra.delkey('external_ids', 'neutron:network_name')
    out(step='mutate sets and maps', status=commit(ta)[0])

    # nb_cfg bumped with a change, as a CMS asks for --wait: the new value comes back.
    run_until([a, b], lambda: find(a, 'Logical_Switch_Port', 'net0-pc') is not None)
    ta = idl_mod.Transaction(a)
    g = rows(a, 'NB_Global')[0]
    before = g.nb_cfg
    g.increment('nb_cfg')
    find(a, 'Logical_Switch', 'net0').setkey('external_ids', 'revision', '2')
    status, error = commit(ta)
    out(step='increment nb_cfg', status=status, error=error, increment=(ta.get_increment_new_value() - before) if status == 'success' else None)

    # A unique index refuses a second Port_Group of the same name; the transaction changes nothing.
    ta = idl_mod.Transaction(a)
    pg = ta.insert(a.tables['Port_Group'])
    pg.name = 'pg_web'
    pg.ports = [find(a, 'Logical_Switch_Port', 'net0-p1')]
    out(step='port group', status=commit(ta)[0])
    run_until([a, b], lambda: find(b, 'Port_Group', 'pg_web') is not None)
    tb = idl_mod.Transaction(b)
    pg = tb.insert(b.tables['Port_Group'])
    pg.name = 'pg_web'
    other = tb.insert(b.tables['Logical_Switch'])
    other.name = 'not-created'
    status, error = commit(tb)
    out(step='duplicate port group name', status=status, error=error_name(error))

    # A second switch, then its deletion: its ports go with it (they are not root rows).
    ta = idl_mod.Transaction(a)
    sw1 = ta.insert(a.tables['Logical_Switch'])
    sw1.name = 'net1'
    p = ta.insert(a.tables['Logical_Switch_Port'])
    p.name = 'net1-p0'
    sw1.ports = [p]
    out(step='second switch', status=commit(ta)[0])
    run_until([a, b], lambda: find(a, 'Logical_Switch_Port', 'net1-p0') is not None)
    ta = idl_mod.Transaction(a)
    find(a, 'Logical_Switch', 'net1').delete()
    out(step='delete the second switch', status=commit(ta)[0])
    run_until([a, b], lambda: find(b, 'Logical_Switch_Port', 'net1-p0') is None, 5)
    out(step='its port is gone', gone=find(b, 'Logical_Switch_Port', 'net1-p0') is None)

    # Monitor conditions: b follows only net0, then everything again.
    tb = idl_mod.Transaction(b)
    for name in ('cond-x', 'cond-y'):
        r = tb.insert(b.tables['Logical_Switch'])
        r.name = name
    out(step='two more switches', status=commit(tb)[0])
    # Both clients see both (a renames cond-y below; under load its update can lag b's).
    run_until([a, b], lambda: all(find(idl, 'Logical_Switch', n) is not None for idl in (a, b) for n in ('cond-x', 'cond-y')))
    b.cond_change('Logical_Switch', [['name', '==', 'cond-x']])
    run_until([b], lambda: sorted(r.name for r in rows(b, 'Logical_Switch')) == ['cond-x'], 5)
    out(step='condition name == cond-x', names=sorted(r.name for r in rows(b, 'Logical_Switch')))
    ta = idl_mod.Transaction(a)
    find(a, 'Logical_Switch', 'cond-y').name = 'cond-x2'
    find(a, 'Logical_Switch', 'cond-x').setkey('external_ids', 'seen', 'yes')
    out(step='rename outside the condition', status=commit(ta)[0])
    run_until([b], lambda: find(b, 'Logical_Switch', 'cond-x').external_ids.get('seen') == 'yes', 5)
    out(step='condition still holds', names=sorted(r.name for r in rows(b, 'Logical_Switch')), seen=find(b, 'Logical_Switch', 'cond-x').external_ids.get('seen'))
    b.cond_change('Logical_Switch', [True])
    run_until([b], lambda: len(rows(b, 'Logical_Switch')) == 3, 5)
    out(step='condition true', names=sorted(r.name for r in rows(b, 'Logical_Switch')))

    # The tables as both clients see them, by name.
    run_until([a, b], lambda: False, 0.3)
    for idl, who in ((a, 'a'), (b, 'b')):
        out(
            step=f'tables seen by {who}',
            switches={r.name: {'ports': sorted(p.name for p in r.ports), 'external_ids': dict(r.external_ids), 'other_config': dict(r.other_config)} for r in rows(idl, 'Logical_Switch')},
            ports={r.name: {'addresses': list(r.addresses), 'port_security': list(r.port_security)} for r in rows(idl, 'Logical_Switch_Port')},
            port_groups={r.name: sorted(p.name for p in r.ports) for r in rows(idl, 'Port_Group')},
            nb_globals=len(rows(idl, 'NB_Global')),
        )
    a.close()
    b.close()


def loop(remote, n):
    idl = new_idl(remote)
    if not run_until([idl], lambda: connected(idl)):
        out(kind='summary', connected=False)
        return
    counts = {}
    started = time.time()
    for k in range(n):
        name = f'loop{k}'
        outcome = None
        deadline = time.time() + 60
        while outcome is None and time.time() < deadline:
            txn = idl_mod.Transaction(idl)
            txn.insert(idl.tables['Logical_Switch']).name = name
            status = txn.commit_block()
            counts[status] = counts.get(status, 0) + 1
            if status == idl_mod.Transaction.SUCCESS:
                outcome = 'ok'
            elif status == idl_mod.Transaction.TRY_AGAIN:
                # The connection went before the reply: the insert may have committed. The IDL
                # resynchronizes; a retry first looks for the row, as ovsdbapp's callers do.
                run_until([idl], lambda: False, 0.05)
                if find(idl, 'Logical_Switch', name) is not None:
                    outcome = 'uncertain'
            else:
                outcome = f'{status}: {txn.get_error()}'
        out(kind='insert', name=name, outcome=outcome or 'gave up')
    run_until([idl], lambda: False, 0.5)
    names = [r.name for r in rows(idl, 'Logical_Switch')]
    out(kind='summary', connected=True, statuses=counts, seconds=round(time.time() - started, 2), names=sorted(names))
    idl.close()


if __name__ == '__main__':
    if sys.argv[1] == 'script':
        script(sys.argv[2])
    elif sys.argv[1] == 'loop':
        loop(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f'unknown mode {sys.argv[1]}')
