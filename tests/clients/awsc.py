#!/usr/bin/python3 -IS
# awsc.py ARGS...: Debian's aws CLI v2 with ARGS, run by the awsd.py whose
# socket $SPX_AWSD names (see there) with this process's stdin, stdout,
# stderr, environment, working directory and umask; exits with its status.
# With no such server answering, it runs /usr/bin/aws itself. Python runs
# it isolated and without site (-IS): it imports only what it needs.
import json
import os
import socket
import struct
import sys

argv = sys.argv[1:]
path = os.environ.get('SPX_AWSD', '')
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(path)
except OSError:
    s.close()
    os.execv('/usr/bin/aws', ['/usr/bin/aws'] + argv)
mask = os.umask(0o022)
os.umask(mask)
body = json.dumps({'argv': argv, 'env': dict(os.environ), 'cwd': os.getcwd(),
                   'umask': mask}).encode()
msg = struct.pack('>I', len(body)) + body
fds = struct.pack('3i', 0, 1, 2)
sent = s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
if sent < len(msg):
    s.sendall(msg[sent:])
rc = b''
while len(rc) < 4:
    more = s.recv(4 - len(rc))
    if not more:
        sys.stderr.write('awsc: the aws CLI server went away during the call\n')
        sys.exit(1)
    rc += more
sys.exit(struct.unpack('>I', rc)[0])
