package io.virtio4j.cli;

import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.ordering.Ordering;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.util.Locale;

/** Case-insensitive option converters for the ring policies. */
final class Converters {
    private Converters() {
    }

    private static <E extends Enum<E>> E parse(Class<E> type, String v) {
        try {
            return Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            StringBuilder known = new StringBuilder();
            for (E c : type.getEnumConstants()) {
                known.append(known.isEmpty() ? "" : " | ").append(c.name().toLowerCase(Locale.ROOT));
            }
            throw new TypeConversionException("'" + v + "' is not one of " + known);
        }
    }

    static final class OrderingConverter implements ITypeConverter<Ordering> {
        @Override
        public Ordering convert(String v) {
            return parse(Ordering.class, v);
        }
    }

    static final class PublicationConverter implements ITypeConverter<AvailPublication> {
        @Override
        public AvailPublication convert(String v) {
            return parse(AvailPublication.class, v);
        }
    }

    static final class ModeConverter implements ITypeConverter<NotificationMode> {
        @Override
        public NotificationMode convert(String v) {
            return parse(NotificationMode.class, v);
        }
    }

    static final class NetModeConverter implements ITypeConverter<io.virtio4j.devices.net.NetMode> {
        @Override
        public io.virtio4j.devices.net.NetMode convert(String v) {
            return parse(io.virtio4j.devices.net.NetMode.class, v);
        }
    }

    /** rxonly | macswap | loopback | tap:NAME; the tap name is checked when the tap is opened. */
    static io.virtio4j.devices.net.NetMode netMode(String v) {
        String m = v.trim();
        if (m.toLowerCase(Locale.ROOT).startsWith("tap:")) {
            if (m.length() == 4) {
                throw new TypeConversionException("--mode tap:NAME needs a tap name");
            }
            return io.virtio4j.devices.net.NetMode.TAP;
        }
        if (m.equalsIgnoreCase("tap")) {
            throw new TypeConversionException("--mode tap needs a tap name: tap:NAME");
        }
        return parse(io.virtio4j.devices.net.NetMode.class, m);
    }

    static final class TxPollConverter implements ITypeConverter<io.virtio4j.devices.net.TapPolling.TxPoll> {
        @Override
        public io.virtio4j.devices.net.TapPolling.TxPoll convert(String v) {
            try {
                return io.virtio4j.devices.net.TapPolling.TxPoll.parse(v);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class OnOffConverter implements ITypeConverter<Boolean> {
        @Override
        public Boolean convert(String v) {
            return switch (v.trim().toLowerCase(Locale.ROOT)) {
                case "on", "true", "yes" -> true;
                case "off", "false", "no" -> false;
                default -> throw new TypeConversionException("'" + v + "' is not on | off");
            };
        }
    }
}
