/* landscape_orders.h - the expert orders a landscape ranges over (counted,
 * stored as bytes, compared) and the share of items each cooperating process
 * computes. */
#ifndef MS_LANDSCAPE_ORDERS_H
#define MS_LANDSCAPE_ORDERS_H

#include <stddef.h>
#include <stdint.h>

/* n! as a double: the number of expert orders of n experts */
double ls_factorial(int n);
/* n! for people: "40320", or "about 10^13019" once it has more than 15 digits
 * (n! overflows a double at n = 171). */
void ls_factorial_format(char *buf, size_t cap, int n);
/* a count given by its log10 for people, as ls_factorial_format: "362880" or
 * "about 10^287" */
void ls_count_format(char *buf, size_t cap, double log10_count);
/* log10 of n! and of (m!)^G G!, finite where the counts overflow */
double ls_factorial_log10(int n);
double ls_wreath_log10(int G, int m);

/* (m!)^G G!: the expert orders that map G groups of m experts onto groups */
double ls_wreath_count(int G, int m);

/* the order of id in orders (norders, n) as ints into p (n) */
void ls_order_get(const uint8_t *orders, int n, long id, int *p);
/* order id of orders equals p (n ints) */
int ls_order_is(const uint8_t *orders, int n, long id, const int *p);
/* sum_i C[i][pi(i)] (C (n, n)) for order id of orders */
double ls_order_cost(const double *C, const uint8_t *orders, int n, long id);

/* The share [*lo, *hi) of items [0, total) that process rank of size computes: contiguous,
 * sizes differing by at most one. */
void ls_share(long total, int rank, int size, long *lo, long *hi);

#endif
