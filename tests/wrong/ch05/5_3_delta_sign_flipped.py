"""delta is taken as mean_a - mean_b: M2 (delta squared) is right but the merged mean moves away from B instead of towards it."""
EXERCISE = "5.3"


def welford_merge(count_a, mean_a, m2_a, count_b, mean_b, m2_b):
    if count_b == 0:
        return count_a, mean_a, m2_a
    if count_a == 0:
        return count_b, mean_b, m2_b
    count = count_a + count_b
    delta = mean_a - mean_b
    mean = mean_a + delta * (count_b / count)
    return count, mean, m2_a + m2_b + delta * delta * (count_a * count_b / count)
