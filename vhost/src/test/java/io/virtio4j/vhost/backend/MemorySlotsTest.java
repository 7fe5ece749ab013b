package io.virtio4j.vhost.backend;

import io.virtio4j.os.FileDescriptor;
import io.virtio4j.os.Memfd;
import io.virtio4j.os.Mmap;
import io.virtio4j.vhost.protocol.MemoryRegionDescription;
import io.virtio4j.vhost.protocol.Message;
import io.virtio4j.vhost.protocol.ProtocolFeatures;
import io.virtio4j.vhost.protocol.Request;
import io.virtio4j.vhost.protocol.SingleMemoryRegion;
import io.virtio4j.vhost.protocol.U64;
import io.virtio4j.vhost.protocol.VhostUserProtocolException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static io.virtio4j.vhost.backend.SessionMessages.message;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * GET_MAX_MEM_SLOTS answers 509 as libvhost-user does, and the table takes that many regions from ADD_MEM_REG;
 * one more is refused naming the field.
 */
class MemorySlotsTest {
    private static final long USER = 0x7000_0000_0000L;

    private static Message addMemReg(int i, FileDescriptor fd) {
        long page = Mmap.pageSize();
        // every other page in both spaces: no two regions adjacent, so none could be taken for another's tail
        return message(Request.ADD_MEM_REG,
                new SingleMemoryRegion(new MemoryRegionDescription(2 * i * page, page, USER + 2 * i * page, 0)).encode(), fd);
    }

    @Test
    void addMemRegFillsAll509SlotsAndTheNextIsRefused() throws Exception {
        try (VhostUserSession s = new VhostUserSession(new FakeDevice(2), BackendOptions.defaults())) {
            assertNull(s.handle(message(Request.SET_PROTOCOL_FEATURES, new U64(ProtocolFeatures.SESSION).encode())));
            long slots = U64.decode("reply", MemorySegment.ofArray(s.handle(message(Request.GET_MAX_MEM_SLOTS, new byte[0])))).value();
            assertEquals(509, slots, "GET_MAX_MEM_SLOTS");
            for (int i = 0; i < 509; i++) {
                assertNull(s.handle(addMemReg(i, Memfd.create("slot-" + i, Mmap.pageSize()))), "ADD_MEM_REG " + i);
            }
            FileDescriptor extra = Memfd.create("slot-509", Mmap.pageSize());
            Message m = addMemReg(509, extra);
            VhostUserProtocolException e = assertThrows(VhostUserProtocolException.class, () -> s.handle(m));
            assertEquals("regions", e.field(), e.getMessage());
            assertEquals(509, e.value(), e.getMessage());
            m.closeUntakenFds(); // what the connection does after every message
            assertEquals(false, extra.isOpen(), "the refused region's fd is closed");
            // the table is whole: the last region still translates, and removing one frees a slot
            assertNull(s.handle(message(Request.REM_MEM_REG,
                    new SingleMemoryRegion(new MemoryRegionDescription(0, Mmap.pageSize(), USER, 0)).encode())));
            assertNull(s.handle(addMemReg(509, Memfd.create("slot-509b", Mmap.pageSize()))));
        }
    }
}
