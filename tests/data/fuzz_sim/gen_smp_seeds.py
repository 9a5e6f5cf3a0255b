#!/usr/bin/env python3
# Writes the seeds of tests/fuzz/fuzz_sim_smp.c into the directory given
# (tests/data/fuzz_sim/).  An input is a config byte (bits 0-1 fabric:
# b2b, star:3, b2b, fattree:4; bit 2 trace; bit 3 capture) then operations,
# each an opcode byte and its operands as fuzz_sim_smp.c reads them.  The
# standalone driver reads only 512 bytes of a seed: keep them shorter.
# Usage: gen_smp_seeds.py DIR
import struct, os, sys
out = sys.argv[1]
OP = dict(WIRE=0, DR=1, LID=2, PMA=3, SMA=4, PMAD=5, SEND=6, RMPP=7, REG=8, UNREG=9, TIME=10, FAULT=11, LINK=12)
ATTRS = [0x10,0x11,0x12,0x14,0x15,0x16,0x17,0x18,0x19,0x1b,0x20,0xff90,0x02,0x01]
def smp_hdr(m, attr_idx, method_idx, mod=0):
    m[0]=1; m[1]=0x81; m[2]=1; m[3]=method_idx; m[17]=attr_idx; m[18]=0x40 if mod else 0
    m[20:24]=struct.pack('>I', mod)
def op_mad(m): return bytes([len(m)-1]) + bytes(m)
def w(name, data):
    assert len(data) <= 512, name
    open(os.path.join(out, name), 'wb').write(bytes(data))

# direct SMA Get of every attribute, switch then CA (star:3)
for nm, node, port in (('smp_sma_get_switch.bin', 0, 0), ('smp_sma_get_ca.bin', 1, 1)):
    d = bytearray([1])
    for i in range(len(ATTRS)):
        m = bytearray(24); smp_hdr(m, i, 0)
        d += bytes([OP['SMA'], node, port]) + op_mad(m)
    w(nm, d)
# Set of every attribute with data (switch), a port block each
for part in range(0, len(ATTRS), 3):
    d = bytearray([1])
    for i in range(part, min(part + 3, len(ATTRS))):
        m = bytearray(128); smp_hdr(m, i, 1, 0x00000001 if ATTRS[i] not in (0x18,) else 0x00010001)
        for j in range(64, 128): m[j] = (j * 7) & 0xff
        d += bytes([OP['SMA'], 0, 0]) + op_mad(m)
    w('smp_sma_set_switch_%d.bin' % (part // 3), d)
# DR walks from h1: to the switch (1 hop), to h2 (2 hops), and back from switch port 0
d = bytearray([1])
for hops, path in ((1, [1]), (2, [1, 2])):
    m = bytearray(131); smp_hdr(m, 1, 0); m[7] = hops
    for k, p in enumerate(path): m[129 + k] = p
    d += bytes([OP['DR'], 0x10, 0, 0, 0]) + op_mad(m)
m = bytearray(131); smp_hdr(m, 4, 0); m[7] = 1; m[129] = 3
d += bytes([OP['DR'], 0x00, 0, 0, 0]) + op_mad(m)
w('smp_dr_walk.bin', d)
# LID routed SMPs and PMA requests, fat tree
d = bytearray([3])
for lid in (0, 3, 8):
    m = bytearray(24); m[17] = 4  # PortInfo
    d += bytes([OP['LID'], 0x60, 0, lid, 0]) + op_mad(m)
for attr_idx, meth in ((0, 1), (1, 1), (2, 1), (1, 0)):
    m = bytearray(68); m[17] = attr_idx; m[3] = meth; m[65] = 0xff
    d += bytes([OP['PMA'], 0x60, 0, 9, 1]) + op_mad(m)
w('smp_lid_pma_fattree.bin', d)

def send(stream, agent, timeout, retries, lid, qpn, m):
    return bytes([OP['SEND'], stream, agent, timeout, retries]) + struct.pack('>H', lid) + \
        bytes([qpn, 0, 0, 0, 0]) + struct.pack('>H', len(m)) + bytes(m)
# SA GetTable with kernel RMPP, 3 segments, h1 -> h2 (b2b: LIDs 1, 2)
m = bytearray(480); m[0]=1; m[1]=3; m[2]=2; m[3]=0x12; m[15]=7; m[16]=0; m[17]=0x35
m[24]=1; m[25]=1; m[26]=0x31
for j in range(56, 480): m[j] = j & 0xff
d = bytearray([0]) + send(0, 0, 100, 1, 2, 1, m)
d += bytes([OP['TIME'], 10]) * 3 + bytes([OP['TIME'], 0x81])
w('smp_sa_rmpp.bin', d)
# user RMPP (class 0x06, agent 3) raw segments, then a response with no request
m = bytearray(260); m[0]=1; m[1]=6; m[2]=1; m[3]=0x01; m[24]=1; m[25]=1; m[26]=0x07
m[31]=1
d = bytearray([0]) + send(0, 3, 0, 0, 2, 1, m)
m2 = bytearray(64); m2[0]=1; m2[1]=7; m2[2]=2; m2[3]=0x81; m2[8]=0; m2[11]=1
d += send(1, 1, 0, 0, 1, 1, m2)
w('smp_user_rmpp.bin', d)
# CM request with timeout and retries to a LID nobody has, time passes
m = bytearray(64); m[0]=1; m[1]=7; m[2]=2; m[3]=0x03; m[17]=0x10
d = bytearray([1]) + send(0, 1, 20, 2, 9, 1, m) + send(1, 1, 20, 0, 3, 1, m)
d += bytes([OP['TIME'], 30]) * 4
w('smp_umad_timeout.bin', d)
# faults: dup and delay on the CM class, then traffic; link down/up makes Trap 128
d = bytearray([1]) + bytes([OP['FAULT'], 1, 7, 100, OP['FAULT'], 3, 7, 100])
d += send(0, 1, 50, 1, 3, 1, m) + bytes([OP['TIME'], 10, OP['TIME'], 0x80])
d += bytes([OP['LINK'], 0x10, OP['LINK'], 0x10, OP['LINK'], 0x00])
w('smp_fault_link.bin', d)
# RMPP segments put on the wire: DATA first+last, ACK, STOP, ABORT
d = bytearray([0])
for t, flags in ((1, 7), (2, 1), (3, 1), (4, 1), (1, 3)):
    mm = bytearray(40); mm[1] = 0; mm[3] = 0x12; mm[25] = t - 1; mm[26] = flags; mm[31] = 1
    d += bytes([OP['RMPP'], 0x10, 0, 1]) + op_mad(mm)
w('smp_rmpp_segments.bin', d)
# reassembly out of order (seg 1, 3, 2, 3 last), then a STOP for a kernel RMPP send
def seg(src, lid, typ, flags, segno, method=0x12, tidlo=5, hi=0, n=256):
    mm = bytearray(n); mm[1] = 0; mm[3] = method; mm[11] = hi; mm[15] = tidlo
    mm[25] = typ - 1; mm[26] = flags; mm[31] = segno
    return bytes([OP['RMPP'], src, 0, lid]) + op_mad(mm)
d = bytearray([0])
d += seg(0x00, 1, 1, 3, 1, n=40) + seg(0x00, 1, 1, 1, 3, n=40) + seg(0x00, 1, 1, 1, 2, n=40)
d += seg(0x00, 1, 1, 5, 3, n=40)
m = bytearray(260); m[0]=1; m[1]=3; m[2]=2; m[3]=0x12; m[15]=7; m[24]=1; m[25]=1; m[26]=0x31
d += send(0, 0, 100, 1, 9, 1, m)  # to nobody: the send stays open
d += seg(0x10, 0, 3, 1, 0, method=0x92, tidlo=7, hi=1, n=40)
w('smp_rmpp_reorder_stop.bin', d)
