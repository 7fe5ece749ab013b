package io.virtio4j.vhost.frontend;

/**
 * Guest memory on huge pages was asked for and the system has none to give (hugetlbfs pool empty or too small:
 * see {@code /proc/sys/vm/nr_hugepages}); ask for ordinary memory instead.
 */
public final class HugePagesUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    HugePagesUnavailableException(long size, Throwable cause) {
        super("no huge pages for " + size + " bytes of guest memory (raise /proc/sys/vm/nr_hugepages or use "
                + "ordinary pages): " + cause.getMessage(), cause);
    }
}
