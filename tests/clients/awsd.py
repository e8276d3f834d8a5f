#!/usr/bin/python3
# awsd.py SOCKET: Debian's aws CLI v2, imported once and forked for each
# call (a zygote). tests/run.sh starts one for a run; awsc.py is its client.
#
# Why: a start of /usr/bin/aws costs about 1.4 s of CPU here (an EC2 call:
# 0.97 s user, 0.42 s system), most of it importing the CLI and parsing its
# models, before it sends a byte; the suite makes thousands of calls, and
# CI runs the suite twice (plain and under ASan). A child forked from this
# warm process runs the entry point /usr/bin/aws runs
# (awscli.clidriver.AWSCLIEntryPoint().main(argv)) with the caller's
# arguments, environment, working directory, umask, and its stdin, stdout
# and stderr (descriptors passed over the socket): the same client doing
# the same work, in 0.4 s a call. Each call is its own process: nothing
# one call sets is seen by the next.
#
# A request: the three descriptors (SCM_RIGHTS) with a 4-byte big-endian
# length, then that many bytes of JSON {"argv", "env", "cwd", "umask"}.
# The answer: 4 bytes, the call's exit status (128 + N when signal N ended
# it). A caller that goes away ends its call (SIGTERM), as an aws process
# would have ended with it.
import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys
from collections import OrderedDict

if os.environ.get('LC_CTYPE', '') == 'UTF-8':  # as /usr/bin/aws does
    os.environ['LC_CTYPE'] = 'en_US.UTF-8'
import awscli  # noqa: E402  the import this process exists for
import awscli.clidriver  # noqa: E402
import botocore.loaders as loaders  # noqa: E402  (awscli.botocore, by the CLI's alias)

original_load_file = loaders.JSONFileLoader.load_file

MAX_REQUEST = 1 << 20


# The JSON the calls of the suite load (the models of these services, the
# endpoints and partitions, the CLI's own tables), parsed once here; see
# load_file.
SERVICES = ('ec2', 's3', 'sts', 'iam', 'ebs')
parsed = {}


def preparse():
    top = os.path.dirname(os.path.abspath(awscli.__file__))
    files = [os.path.join(top, 'data', 'cli.json')]
    data = os.path.join(top, 'botocore', 'data')
    files += [os.path.join(data, f) for f in os.listdir(data) if f.endswith('.json')]
    for svc in SERVICES:
        for ver in os.listdir(os.path.join(data, svc)):
            d = os.path.join(data, svc, ver)
            files += [os.path.join(d, f) for f in os.listdir(d) if f.endswith('.json')]
    for f in files:
        with open(f, 'rb') as fp:
            parsed[f] = json.loads(fp.read().decode('utf-8'), object_pairs_hook=OrderedDict)


def load_file(self, file_path):
    # botocore's JSONFileLoader.load_file, with the parse done before the
    # fork: the first load of a file in a call is handed the object this
    # process parsed (untouched here, the child's own copy after the fork),
    # later loads of it parse the file again, as they would have.
    full_path = file_path + '.json'
    obj = parsed.pop(full_path, None)
    if obj is None or not os.path.isfile(full_path):
        return original_load_file(self, file_path)
    loaders.logger.debug("Loading JSON file: %s", full_path)
    return obj


def warm():
    # Modules the CLI imports lazily while it builds its command table.
    driver = awscli.clidriver.create_clidriver()
    driver._get_command_table()
    for name in ('ec2', 's3api', 'sts', 'iam'):
        driver._get_command_table()[name]._get_command_table()
    preparse()


def read_request(conn):
    data, anc, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * 4))
    fds = []
    for level, kind, raw in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(struct.unpack('%di' % (len(raw) // 4), raw[:len(raw) - len(raw) % 4]))
    if len(fds) != 3 or len(data) < 4:
        for fd in fds:
            os.close(fd)
        raise ValueError('a request is three descriptors and a length')
    (n,) = struct.unpack('>I', data[:4])
    if n > MAX_REQUEST:
        for fd in fds:
            os.close(fd)
        raise ValueError('request of %d bytes' % n)
    data = data[4:]
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            break
        data += more
    req = json.loads(data[:n])
    return fds, req


def child(fds, req):
    # The caller's descriptors become this process's 0, 1 and 2.
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(req['cwd'])
    os.umask(int(req.get('umask', 0o022)))
    os.environ.clear()
    os.environ.update(req['env'])
    if os.environ.get('LC_CTYPE', '') == 'UTF-8':
        os.environ['LC_CTYPE'] = 'en_US.UTF-8'
    # What importing awscli does to the environment (awscli/__init__.py):
    # the caller's AWS_DATA_PATH, then the CLI's own data.
    paths = [os.path.expanduser(os.path.expandvars(p))
             for p in os.environ.get('AWS_DATA_PATH', '').split(os.pathsep)
             if 'AWS_DATA_PATH' in os.environ]
    paths.append(os.path.join(os.path.dirname(os.path.abspath(awscli.__file__)), 'data'))
    os.environ['AWS_DATA_PATH'] = os.pathsep.join(paths)
    sys.argv = ['/usr/bin/aws'] + req['argv']
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        rc = awscli.clidriver.AWSCLIEntryPoint().main(req['argv'])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os._exit((rc or 0) & 0xff)


def main():
    path = sys.argv[1]
    warm()
    loaders.JSONFileLoader.load_file = load_file
    # Objects made so far are left out of the collector's passes: a pass in
    # a child would otherwise touch (and so copy) every page of them.
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + '.new')
    os.chmod(path + '.new', 0o600)
    srv.listen(64)
    os.rename(path + '.new', path)  # callers see it only when it listens

    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    calls = {}  # pid -> the caller's connection
    callers = {}  # the caller's connection -> pid

    def stop(*_):
        # The calls still running end with the server.
        for pid in calls:
            os.kill(pid, signal.SIGTERM)
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)

    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is wake_r:
                try:
                    while wake_r.recv(512):
                        pass
                except BlockingIOError:
                    pass
                continue
            if key.fileobj is not srv:
                # A caller sends nothing after its request: this is its end
                # (killed, or timed out). Its call ends with it, as the
                # aws process it stands for would have.
                sel.unregister(key.fileobj)
                pid = callers.get(key.fileobj)
                if pid is not None:
                    os.kill(pid, signal.SIGTERM)
                continue
            conn, _ = srv.accept()
            conn.settimeout(10)
            try:
                fds, req = read_request(conn)
            except (OSError, ValueError) as e:
                print('awsd: bad request: %s' % e, file=sys.stderr)
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                srv.close()
                conn.close()
                child(fds, req)
            for fd in fds:
                os.close(fd)
            calls[pid] = conn
            callers[conn] = pid
            sel.register(conn, selectors.EVENT_READ)
        while calls:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = calls.pop(pid, None)
            if conn is None:
                continue
            del callers[conn]
            if os.WIFSIGNALED(status):
                rc = 128 + os.WTERMSIG(status)
            else:
                rc = os.WEXITSTATUS(status)
            try:
                sel.unregister(conn)
            except KeyError:
                pass
            try:
                conn.sendall(struct.pack('>I', rc))
            except OSError:
                pass  # the caller went away
            conn.close()

if __name__ == '__main__':
    main()
