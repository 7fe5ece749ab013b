package io.virtio4j.cli;

import io.virtio4j.bench.Reclaim;
import io.virtio4j.bench.TrafficPattern;
import io.virtio4j.core.policy.AvailPublication;
import io.virtio4j.core.policy.NotificationMode;
import io.virtio4j.core.ordering.Ordering;
import io.virtio4j.devices.InvalidDeviceOptionException;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

import java.util.Locale;
import java.util.function.UnaryOperator;

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

    static final class ReclaimConverter implements ITypeConverter<Reclaim> {
        @Override
        public Reclaim convert(String v) {
            return parse(Reclaim.class, v);
        }
    }

    static final class PatternConverter implements ITypeConverter<TrafficPattern> {
        @Override
        public TrafficPattern convert(String v) {
            return parse(TrafficPattern.class, v);
        }
    }

    static final class ModeConverter implements ITypeConverter<NotificationMode> {
        @Override
        public NotificationMode convert(String v) {
            return parse(NotificationMode.class, v);
        }
    }

    /** How the receive and the transmit queue of every pair wait: {@code --notify MODE} or {@code rx=MODE,tx=MODE}. */
    record PairNotification(NotificationMode rx, NotificationMode tx) {
        /** One mode per virtqueue of {@code pairs} pairs: receive queues at even indexes, transmit at odd. */
        NotificationMode[] perQueue(int pairs) {
            NotificationMode[] m = new NotificationMode[Math.max(0, 2 * pairs)];
            for (int q = 0; q < m.length; q++) {
                m[q] = q % 2 == 0 ? rx : tx;
            }
            return m;
        }

        boolean uniform() {
            return rx == tx;
        }

        String describe() {
            return uniform() ? name(rx) : "rx " + name(rx) + ", tx " + name(tx);
        }

        private static String name(NotificationMode m) {
            return m.name().toLowerCase(Locale.ROOT);
        }
    }

    static final class PairNotificationConverter implements ITypeConverter<PairNotification> {
        @Override
        public PairNotification convert(String v) {
            if (!v.contains("=")) {
                NotificationMode m = parse(NotificationMode.class, v);
                return new PairNotification(m, m);
            }
            NotificationMode rx = null;
            NotificationMode tx = null;
            for (String part : v.split(",", -1)) {
                int eq = part.indexOf('=');
                String role = eq < 0 ? part.trim() : part.substring(0, eq).trim().toLowerCase(Locale.ROOT);
                if (eq < 0 || !(role.equals("rx") || role.equals("tx"))) {
                    throw new TypeConversionException("'" + part + "' is not rx=MODE or tx=MODE");
                }
                NotificationMode m = parse(NotificationMode.class, part.substring(eq + 1));
                if (role.equals("rx") ? rx != null : tx != null) {
                    throw new TypeConversionException(role + " is given twice in '" + v + "'");
                }
                if (role.equals("rx")) {
                    rx = m;
                } else {
                    tx = m;
                }
            }
            if (rx == null || tx == null) {
                throw new TypeConversionException("'" + v + "' needs both rx=MODE and tx=MODE");
            }
            return new PairNotification(rx, tx);
        }
    }

    /** rxonly | macswap | loopback | tap:NAME; the tap name is checked when the tap is opened. */
    static io.virtio4j.devices.net.NetMode netMode(String v, io.virtio4j.devices.net.TapPolling polling) {
        String m = v.trim();
        if (m.toLowerCase(Locale.ROOT).startsWith("tap:")) {
            if (m.length() == 4) {
                throw new TypeConversionException("--mode tap:NAME needs a tap name");
            }
            return new io.virtio4j.devices.net.NetMode.Tap(m.substring(4), polling);
        }
        return switch (m.toLowerCase(Locale.ROOT)) {
            case "rxonly" -> io.virtio4j.devices.net.NetMode.RXONLY;
            case "macswap" -> io.virtio4j.devices.net.NetMode.MACSWAP;
            case "loopback" -> io.virtio4j.devices.net.NetMode.LOOPBACK;
            case "tap" -> throw new TypeConversionException("--mode tap needs a tap name: tap:NAME");
            default -> throw new TypeConversionException("'" + v + "' is not one of rxonly | macswap | loopback | tap:NAME");
        };
    }

    /**
     * {@code e} in a command's flags: "--iodepth=0: must be in [1, 4096]" for the library's "depth=0: ...", the form
     * the endpoint's errors take too ("--fd=7: ..."); {@code flag} names the flag that sets a library option.
     */
    static ParameterException refused(CommandSpec spec, InvalidDeviceOptionException e, UnaryOperator<String> flag) {
        String m = e.getMessage();
        String f = flag.apply(e.option());
        return new ParameterException(spec.commandLine(),
                m.startsWith(e.option() + "=") ? f + m.substring(e.option().length()) : f + ": " + m);
    }

    /** The flag of {@code serve net} that sets a {@link io.virtio4j.devices.net.NetDevice.Options} option. */
    static String netFlag(String option) {
        return switch (option) {
            case "pairs" -> "--queues";
            case "notification" -> "--notify";
            case "hybridSpinNanos" -> "--hybrid-spin-ns";
            case "cpus" -> "--cpu";
            case "txPoll" -> "--tx-poll";
            default -> "--" + option; // mode, weight, mac, mtu
        };
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

    /** {@code split | packed}: a ring format. */
    static final class RingFormatConverter implements ITypeConverter<io.virtio4j.core.layout.RingFormat> {
        @Override
        public io.virtio4j.core.layout.RingFormat convert(String v) {
            return switch (v.trim().toLowerCase(Locale.ROOT)) {
                case "split" -> io.virtio4j.core.layout.RingFormat.SPLIT;
                case "packed" -> io.virtio4j.core.layout.RingFormat.PACKED;
                default -> throw new TypeConversionException("'" + v + "' is not split | packed");
            };
        }
    }
}
