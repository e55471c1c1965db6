"""
Replay packets on the two-host rig's link: a burst of duplicated, reordered frames.

    python test/support/rig_replay.py NEAR_NS NEAR_END FAR_NS FAR_END SECONDS [SHARE]

For SECONDS, every unicast IPv4 frame that arrives at one host's end of the link is, with
probability SHARE (default 0.5), sent again from the other host's end after a random delay
of up to `MAX_DELAY`: the receiver gets it twice, the copy behind frames sent after it.
Both ways: the controller's commands and the simulator's states. The kernel has no `netem`
everywhere (this machine's has none), so the copies are made here, with packet sockets.
Prints the number of copies sent. Needs CAP_NET_RAW in both namespaces (root).
"""

import ctypes
import heapq
import random
import select
import socket
import sys
import time

#: setns(2) flag of a network namespace
CLONE_NEWNET = 0x40000000
#: the longest a copy is held back, s: later than several of the 2 ms ticks' packets
MAX_DELAY = 0.02
#: ethertype of IPv4; ARP and the rest pass untouched
ETH_P_IP = 0x0800
#: packet type of a frame addressed to this host (socket.PACKET_HOST)
PACKET_HOST = 0


def packet_socket(ns, end):
    """Return a packet socket on `end` in namespace `ns` (it stays there)."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f'/run/netns/{ns}') as there:
        if libc.setns(there.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f'setns into {ns}')
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    sock.bind((end, ETH_P_IP))
    return sock


def main(near_ns, near_end, far_ns, far_end, seconds, share=0.5):
    """Replay for `seconds`; return the number of copies sent."""
    home = open('/proc/self/ns/net')
    near, far = packet_socket(near_ns, near_end), packet_socket(far_ns, far_end)
    ctypes.CDLL(None).setns(home.fileno(), CLONE_NEWNET)
    other = {near: far, far: near}
    copies = {near: {}, far: {}}     # per receiving socket: frame -> copies still to come
    due, sent, order = [], 0, 0
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end or due:
        wait = max(min(due[0][0] if due else end, end) - time.monotonic(), 0.0)
        for sock in select.select([near, far], [], [], wait)[0]:
            frame, address = sock.recvfrom(65536)
            if address[2] != PACKET_HOST:
                continue
            if copies[sock].get(frame):          # a copy of ours arriving: leave it
                copies[sock][frame] -= 1
                continue
            if time.monotonic() < end and random.random() < float(share):
                order += 1
                heapq.heappush(due, (time.monotonic() + random.uniform(0, MAX_DELAY), order,
                                     other[sock], frame, sock))
        while due and due[0][0] <= time.monotonic():
            _, _, out, frame, receiver = heapq.heappop(due)
            copies[receiver][frame] = copies[receiver].get(frame, 0) + 1
            out.send(frame)
            sent += 1
    return sent


if __name__ == '__main__':
    print(main(*sys.argv[1:]), flush=True)
