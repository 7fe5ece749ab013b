package io.virtio4j.vhost.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** SET_LOG_BASE: the back-end mapped a new dirty log. */
@Name("io.virtio4j.LogBaseSet")
@Label("Log Base Set")
@Category({"virtio4j", "vhost-user back-end"})
@Description("SET_LOG_BASE mapped a dirty log (one bit per 4 KiB guest page); logging rings restart over it")
@StackTrace(false)
public final class LogBaseSet extends Event {
    @Label("Size")
    @Description("mmap_size: the log's bytes")
    @DataAmount
    long size;

    @Label("Offset")
    @Description("mmap_offset: where the log starts in its file")
    long offset;

    @Label("Logging")
    @Description("VHOST_F_LOG_ALL is negotiated: the rings with the log flag log in it from now on")
    boolean logging;

    /** Control thread, once the log is mapped, before the rings restart over it. */
    public static void emit(long size, long offset, boolean logging) {
        LogBaseSet e = new LogBaseSet();
        if (e.shouldCommit()) {
            e.size = size;
            e.offset = offset;
            e.logging = logging;
            e.commit();
        }
    }
}
