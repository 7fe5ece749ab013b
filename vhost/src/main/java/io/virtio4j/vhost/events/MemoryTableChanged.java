package io.virtio4j.vhost.events;

import io.virtio4j.vhost.memory.MemoryRegion;
import io.virtio4j.vhost.memory.MemoryTable;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A new memory table is installed (SET_MEM_TABLE, ADD_MEM_REG, REM_MEM_REG). */
@Name("io.virtio4j.MemoryTableChanged")
@Label("Memory Table Changed")
@Category({"virtio4j", "vhost-user back-end"})
@Description("The back-end installed a new table of guest memory regions; the started rings were stopped and started over it")
@StackTrace(false)
public final class MemoryTableChanged extends Event {
    @Label("Request")
    @Description("SET_MEM_TABLE, ADD_MEM_REG or REM_MEM_REG")
    String request;

    @Label("Regions")
    @Description("Regions in the table now")
    int regions;

    @Label("Total Size")
    @Description("Guest memory the regions cover")
    @DataAmount
    long totalBytes;

    /** Control thread, once the table is installed. */
    public static void emit(String request, MemoryTable table) {
        MemoryTableChanged e = new MemoryTableChanged();
        if (e.shouldCommit()) {
            long total = 0;
            for (MemoryRegion r : table.regions()) {
                total += r.size();
            }
            e.request = request;
            e.regions = table.regions().size();
            e.totalBytes = total;
            e.commit();
        }
    }
}
