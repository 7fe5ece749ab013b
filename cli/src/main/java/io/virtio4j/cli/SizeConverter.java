package io.virtio4j.cli;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.util.Locale;

/**
 * A byte count as fio and qemu-img write it: a number with an optional binary suffix K, M, G, T (also KiB ... TiB,
 * or with a trailing B), e.g. {@code 1G}, {@code 512M}, {@code 4096}. Overflow and negative numbers are refused.
 */
final class SizeConverter implements ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
        return parse(value);
    }

    static long parse(String value) {
        String v = value.trim().toUpperCase(Locale.ROOT);
        if (v.endsWith("IB")) {
            v = v.substring(0, v.length() - 2);
        } else if (v.endsWith("B") && v.length() > 1 && !Character.isDigit(v.charAt(v.length() - 2))) {
            v = v.substring(0, v.length() - 1);
        } else if (v.endsWith("B")) {
            v = v.substring(0, v.length() - 1);
        }
        int shift = 0;
        if (!v.isEmpty()) {
            switch (v.charAt(v.length() - 1)) {
                case 'K' -> shift = 10;
                case 'M' -> shift = 20;
                case 'G' -> shift = 30;
                case 'T' -> shift = 40;
                default -> { }
            }
        }
        if (shift != 0) {
            v = v.substring(0, v.length() - 1);
        }
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + value + "' is not a size (a number with K, M, G or T)");
        }
        if (n < 0 || n > (Long.MAX_VALUE >> shift)) {
            throw new TypeConversionException("'" + value + "' is out of range");
        }
        return n << shift;
    }
}
