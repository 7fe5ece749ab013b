package io.virtio4j.core.ordering;

/**
 * Barrier strength of one queue, chosen at run time.
 *
 * <p>The store-&gt;load points (publish an index, then read the other side's suppression state; re-enable
 * notifications, then re-read the index) take a full fence in both modes ({@link Fences#storeLoad()}): without
 * it the lost-notification race is real even on x86. The modes differ at the publication points (the store of
 * {@code avail.idx} or {@code used.idx}, after the descriptors, ring entries and payload it publishes) and the
 * observation points (the load of the other side's index, before the entries, descriptors and payload it covers):
 * <ul>
 *   <li>{@link #WEAK}: SMP-style ordering for a software peer. Publication is a release store of the index,
 *       observation an acquire load; no fence instruction is needed on x86, and arm64 uses {@code stlr}/{@code
 *       ldar}. The analogue of the kernel's {@code virt_wmb}/{@code virt_rmb}.</li>
 *   <li>{@link #STRONG}: additionally {@code VarHandle.fullFence()} before each publication and after each
 *       observation that found something new to read (each one counted in
 *       {@link io.virtio4j.core.stats.QueueCounters#strongFences}); an observation that finds the ring as it was
 *       reads nothing after it, so it needs no fence and takes none (Linux's {@code vhost_get_avail_idx} and
 *       {@code virtqueue_get_buf} take their read barrier only then too), and a busy-polling peer pays nothing per
 *       empty poll; selected automatically when VIRTIO_F_ORDER_PLATFORM is negotiated.</li>
 * </ul>
 *
 * <p>What STRONG guarantees, and what it does not. A Linux driver facing a hardware device uses the mandatory
 * barriers: {@code dma_wmb} before publishing, {@code dma_rmb} after observing, {@code mb} for store-&gt;load.
 * The JVM has no such barriers; {@code fullFence} is the strongest ordering it offers, and it is an SMP barrier:
 * <ul>
 *   <li>x86-64: HotSpot emits a lock-prefixed instruction ({@code lock addl $0,(rsp)}). It orders all loads and
 *       stores to ordinary write-back memory, which is what x86 DMA is coherent with (there {@code dma_rmb} and
 *       {@code dma_wmb} are compiler barriers only), so on x86 STRONG is at least as strong as the mandatory
 *       barriers for cacheable memory. It is not {@code mfence}: it does not order non-temporal stores or
 *       write-combining memory, which this library never uses for rings.</li>
 *   <li>arm64: HotSpot emits {@code dmb ish}, a full barrier for the inner shareable domain (all CPUs of the
 *       system, hence any software peer, and devices coherent within that domain). The kernel's {@code dma_rmb} /
 *       {@code dma_wmb} are {@code dmb oshld} / {@code dmb oshst} and {@code mb} is {@code dsb sy}: they also
 *       order towards observers in the outer shareable domain and, for {@code dsb}, complete before later
 *       instructions. STRONG gives neither: a peer outside the inner shareable domain is not ordered by it.</li>
 * </ul>
 * So STRONG covers every peer that is software on the same host (another process, a VMM, a vhost-user back-end,
 * a guest's vCPU) and cache-coherent devices in the CPUs' inner shareable domain, and adds a margin over WEAK for
 * a peer that expects the mandatory barriers' placement. Out of scope, in either mode: MMIO and PCI ordering (a
 * doorbell or notify write reaching a device after the ring stores; this library kicks through a
 * {@link io.virtio4j.core.notify.Notifier}, e.g. an eventfd system call, which is itself a full barrier), posted-
 * write flushing, non-coherent DMA (cache maintenance), write-combining or device memory, and IOMMU/IOTLB
 * invalidation. The memory attributes of the rings come from their mapping, not from this setting.
 */
public enum Ordering {
    WEAK,
    STRONG
}
