package io.virtio4j.vhost.events;

import io.virtio4j.core.layout.RingFormat;

import java.util.Locale;

/** How the events name a ring format: "split", "packed". */
final class Rings {
    private Rings() {
    }

    static String name(RingFormat format) {
        return format.name().toLowerCase(Locale.ROOT);
    }
}
